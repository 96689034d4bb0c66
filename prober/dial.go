package prober

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/clockctx"
)

// aLongTimeAgo is a deadline in the past: setting it aborts pending I/O.
var aLongTimeAgo = time.Unix(1, 0)

// network holds what the network handlers share: a dialer, a TLS config for
// targets without a server name, pooled read buffers and the clock that
// times probes out.
type network struct {
	dialer    net.Dialer
	tlsNoSNI  *tls.Config
	bufs      sync.Pool // *bufio.Reader
	userAgent string
	clock     clock.WithTicker
}

func newNetwork(userAgent string, clk clock.WithTicker) *network {
	return &network{
		// No TCP keep-alive probes: a probe connection lives for one request.
		dialer:    net.Dialer{KeepAlive: -1, Control: lingerZero},
		tlsNoSNI:  &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // upstream probes do not verify
		userAgent: userAgent,
		clock:     clk,
	}
}

// dial connects to addr with SO_LINGER set to 0, so that closing the
// connection resets it instead of leaving it in TIME-WAIT for a minute on
// this node (upstream kubernetes#115143). Probes read all they need before
// closing, so nothing of value is discarded.
func (n *network) dial(ctx context.Context, addr string) (*net.TCPConn, error) {
	c, err := n.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := c.(*net.TCPConn)
	if n.dialer.Control == nil {
		if err := tc.SetLinger(0); err != nil {
			_ = tc.Close()
			return nil, fmt.Errorf("set SO_LINGER on probe connection: %w", err)
		}
	}
	return tc, nil
}

// abortOnDone makes pending I/O on conn fail once ctx is done. Call the
// returned func when the I/O is over.
func abortOnDone(ctx context.Context, conn net.Conn) func() bool {
	return context.AfterFunc(ctx, func() { _ = conn.SetDeadline(aLongTimeAgo) })
}

// withTimeout returns a context cancelled with cause errTimedOut once d has
// passed on the injected clock, and the func that releases it.
func (n *network) withTimeout(ctx context.Context, d time.Duration) (context.Context, func()) {
	return clockctx.WithTimeoutCause(ctx, n.clock, d, errTimedOut)
}

// timedOut reports whether ctx was cancelled by withTimeout's timer.
func timedOut(ctx context.Context) bool {
	return context.Cause(ctx) == errTimedOut
}
