package kubeletapi_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/nodekit/nodekit/kubeletapi"
)

// closedWithin reads from c until it is closed by the server (EOF or a
// reset) and fails if that takes longer than d.
func closedWithin(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(d)))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("connection still open after %s", d)
	}
}

func TestRunClosesIdleConnections(t *testing.T) {
	defer goleak.VerifyNone(t)
	api := listen(t)
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.Listener, c.HealthzAddr = api, kubeletapi.Disabled
		c.Auth = kubeletapi.AuthConfig{ClientCAFile: servingCertFile, AlwaysAllow: true} // anonymous → 401
		c.IdleTimeout = 200 * time.Millisecond
	})
	defer startServer(t, srv)()

	conn, err := tls.Dial("tcp", api.Addr().String(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // test server
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "GET /pods HTTP/1.1\r\nHost: node\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	// The connection is kept alive, then closed once idle.
	closedWithin(t, conn, 5*time.Second)
}

func TestRunRefusesTricklingBodyAtOnce(t *testing.T) {
	// net/http lingers 500ms after closing a connection's write side
	// (its RST avoidance), past the server's shutdown.
	defer goleak.VerifyNone(t, goleak.IgnoreAnyFunction("net/http.(*conn).closeWriteAndWait"))
	api := listen(t)
	srv, f := newServer(t, func(c *kubeletapi.Config) {
		c.Listener, c.HealthzAddr = api, kubeletapi.Disabled
		c.Auth = kubeletapi.AuthConfig{ClientCAFile: servingCertFile, AlwaysAllow: true}
	})
	defer startServer(t, srv)()

	// A body announced and begun, never finished: the server must answer
	// without waiting for the rest, and close the connection, whatever the
	// body's size (net/http drains up to 256 KiB of a small one).
	for name, framing := range map[string]string{
		"1 MiB":   fmt.Sprintf("Content-Length: %d\r\n\r\nx", 1<<20),
		"1 KiB":   "Content-Length: 1024\r\n\r\nx",
		"chunked": "Transfer-Encoding: chunked\r\n\r\n400\r\nx",
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := tls.Dial("tcp", api.Addr().String(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // test server
			require.NoError(t, err)
			defer conn.Close()
			_, err = fmt.Fprintf(conn, "POST /run/%s/%s/c?cmd=id HTTP/1.1\r\nHost: node\r\n%s", podNS, podName, framing)
			require.NoError(t, err)
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err, "answered before the body arrived")
			resp.Body.Close()
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			require.True(t, resp.Close, "Connection: close")
			closedWithin(t, conn, 5*time.Second)
		})
	}
	require.Empty(t, f.runner.Calls(), "nothing ran")
}

func TestConfigTimeoutsValidated(t *testing.T) {
	cfg, _ := baseConfig()
	cfg.IdleTimeout = -time.Second
	_, err := kubeletapi.New(cfg)
	require.ErrorIs(t, err, kubeletapi.ErrInvalidConfig)
	require.ErrorContains(t, err, "IdleTimeout")
}
