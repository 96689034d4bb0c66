package prober

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
)

// epoch is where fake clocks start.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func realNet() *network { return newNetwork(DefaultUserAgent, clock.RealClock{}) }

// hostPort splits a listener address.
func hostPort(t testing.TB, addr string) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(p)
	require.NoError(t, err)
	return h, port
}

// httpProbeOnce compiles a and probes it once against host with a real-time
// timeout.
func httpProbeOnce(t testing.TB, n *network, a *v1.HTTPGetAction, host string, timeout time.Duration) (outcome, string) {
	t.Helper()
	ht, err := compileHTTP(a)
	require.NoError(t, err)
	port, err := resolvePort(a.Port, &v1.Container{})
	require.NoError(t, err)
	ctx, release := n.withTimeout(context.Background(), timeout)
	defer release()
	out, msg, _ := n.probeHTTP(ctx, ht, host, port, timeout, nil)
	return out, msg
}

func intPort(p int) intstr.IntOrString { return intstr.FromInt32(int32(p)) }

// leakCheck verifies, after every cleanup registered later has run, that
// the test left no goroutine behind.
func leakCheck(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}
