package prober

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// closedPort returns a loopback port nothing listens on.
func closedPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port := hostPort(t, l.Addr().String())
	require.NoError(t, l.Close())
	return port
}

func TestTCPProbe(t *testing.T) {
	defer goleak.VerifyNone(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	n := realNet()
	ctx, release := n.withTimeout(context.Background(), time.Second)
	defer release()

	out, msg := n.probeTCP(ctx, l.Addr().String())
	require.Equal(t, success, out, msg)

	out, msg = n.probeTCP(ctx, joinHostPort("127.0.0.1", closedPort(t)))
	require.Equal(t, failure, out)
	require.Contains(t, msg, "connection refused")
}

func TestTCPProbeTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	n := realNet()
	ctx, release := n.withTimeout(context.Background(), 100*time.Millisecond)
	defer release()
	// 192.0.2.0/24 (TEST-NET-1) is not routed: the connect hangs or is
	// refused by the host at once; either way it fails.
	out, _ := n.probeTCP(ctx, "192.0.2.1:80")
	require.Equal(t, failure, out)
}
