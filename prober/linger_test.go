package prober

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// timeWait counts the loopback sockets in TIME-WAIT whose local or remote
// port is port, from /proc/net/tcp and /proc/net/tcp6.
func timeWait(t testing.TB, port int) int {
	t.Helper()
	local, remote := timeWaitSides(t, port)
	return local + remote
}

// timeWaitSides counts TIME-WAIT sockets whose local port is port (the
// server's side) and whose remote port is port (the client's side).
func timeWaitSides(t testing.TB, port int) (local, remote int) {
	t.Helper()
	hexPort := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 4 || fields[3] != "06" { // 06: TIME_WAIT
				continue
			}
			if strings.HasSuffix(fields[1], hexPort) {
				local++
			}
			if strings.HasSuffix(fields[2], hexPort) {
				remote++
			}
		}
		require.NoError(t, sc.Err())
		require.NoError(t, fh.Close())
	}
	return local, remote
}

func TestProbesLeaveNoTimeWait(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp")
	}
	leakCheck(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/", http.StatusFound)
		}
	}))
	defer srv.Close()
	host, port := hostPort(t, srv.Listener.Addr().String())
	require.Zero(t, timeWait(t, port))

	n := realNet()
	const rounds = 50
	for range rounds {
		for _, path := range []string{"/", "/redirect", "/missing"} {
			out, msg := httpProbeOnce(t, n, &v1.HTTPGetAction{Path: path, Port: intPort(port)}, host, 5*time.Second)
			require.NotEqual(t, unknown, out, msg)
		}
		ctx, release := n.withTimeout(context.Background(), 5*time.Second)
		out, msg := n.probeTCP(ctx, srv.Listener.Addr().String())
		release()
		require.Equal(t, success, out, msg)
	}
	require.Zero(t, timeWait(t, port), "probe sockets left in TIME-WAIT")
	srv.Close() // the server's side of every connection is closed too
	require.Zero(t, timeWait(t, port), "sockets left in TIME-WAIT after the server closed")

	t.Run("control: a plain client close leaves TIME-WAIT", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer func() { _ = l.Close() }()
		_, cport := hostPort(t, l.Addr().String())
		for range 5 {
			c, err := net.Dial("tcp", l.Addr().String())
			require.NoError(t, err)
			s, err := l.Accept()
			require.NoError(t, err)
			require.NoError(t, c.Close()) // client closes first: it goes to TIME-WAIT
			buf := make([]byte, 1)
			_, _ = s.Read(buf) // sees EOF
			require.NoError(t, s.Close())
		}
		require.Eventually(t, func() bool { return timeWait(t, cport) > 0 }, 5*time.Second, 10*time.Millisecond)
	})
}
