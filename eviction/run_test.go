package eviction

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

const testTimeout = 10 * time.Second

// waitFor receives from ch or fails the test after a generous real-time
// timeout (a safety net, not a sleep).
func waitFor[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testTimeout):
		t.Fatal("timed out")
		var zero T
		return zero
	}
}

func waitWaiters(t *testing.T, c *clocktesting.FakeClock) {
	t.Helper()
	spinUntil(t, c.HasWaiters)
}

// spinUntil yields until cond holds, failing after a real-time safety net.
func spinUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "condition not reached")
		runtime.Gosched()
	}
}

// startRun runs m.Run in the background and returns a stop function that
// cancels it and checks it returned nil.
func startRun(t *testing.T, m *Manager) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	return func() {
		cancel()
		require.NoError(t, waitFor(t, done))
	}
}

func TestRunTriggerPollingAndCleanup(t *testing.T) {
	defer goleak.VerifyNone(t)
	a, b := newPod("a"), newPod("b")
	var cleaned atomic.Bool
	e := newEnv(t, Config{PodCleanedUp: func(*v1.Pod) bool { return cleaned.Load() }}, a, b)
	kills := make(chan string, 10)
	calls := func() int { e.host.mu.Lock(); defer e.host.mu.Unlock(); return e.host.getCalls }
	var callsAtLastKill atomic.Int64
	e.host.onKill = func(p *v1.Pod) {
		if p.Name == "b" {
			// The last eviction: the next pass, right after cleanup, finds
			// nothing to do.
			e.host.setPods()
			e.observe(nil)
			callsAtLastKill.Store(int64(calls()))
		}
		kills <- p.Name
	}
	_, waiting := e.m.NextWake()
	require.False(t, waiting, "not running")
	stop := startRun(t, e.m)
	defer stop()
	spinUntil(t, func() bool { _, ok := e.m.NextWake(); return ok }) // first pass done, waiting for the interval
	next, _ := e.m.NextWake()
	require.True(t, e.clock.Now().Add(DefaultMonitoringInterval).Equal(next), "next %v", next)

	// A trigger passes at once, without waiting for the interval.
	e.step(time.Millisecond) // a fresh sample
	e.observe(func(n *node) { n.memAvail = Mi }, podStats(a, podUsage{mem: Gi}), podStats(b, podUsage{mem: Mi}))
	e.m.Trigger()
	_, waiting = e.m.NextWake()
	require.False(t, waiting, "a trigger not yet taken means Run is not waiting")
	require.Equal(t, "a", waitFor(t, kills))

	// Run now waits for the pod to be cleaned up, polling every second:
	// two timers, the timeout and the poll (one alone: Run is between
	// them, and a step would miss the poll).
	cleanupWait := func() { spinUntil(t, func() bool { return e.clock.Waiters() == 2 }) }
	cleanupWait()
	e.host.setPods(b)
	e.step(time.Second)
	cleanupWait()
	// Fresh stats before the cleanup is seen: Run may see it at once,
	// before the next poll.
	e.observe(func(n *node) { n.memAvail = Mi }, podStats(b, podUsage{mem: Mi}))
	cleaned.Store(true)
	e.step(time.Second)
	require.Equal(t, "b", waitFor(t, kills), "the next pass runs right after cleanup")

	// Back to normal: b is cleaned up at once, one more pass runs, then
	// passes happen every MonitoringInterval.
	spinUntil(t, func() bool { return int64(calls()) == callsAtLastKill.Load()+1 })
	waitWaiters(t, e.clock)
	before := calls()
	e.step(DefaultMonitoringInterval - time.Millisecond)
	require.Equal(t, before, calls())
	e.step(time.Millisecond)
	waitWaiters(t, e.clock)
	spinUntil(t, func() bool { return calls() == before+1 })
}

func TestRunCleanupTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	a := newPod("a")
	e := newEnv(t, Config{PodCleanedUp: func(*v1.Pod) bool { return false }}, a)
	kills := make(chan string, 10)
	e.host.onKill = func(p *v1.Pod) { kills <- p.Name }
	e.observe(func(n *node) { n.memAvail = Mi }, podStats(a, podUsage{mem: Gi}))
	stop := startRun(t, e.m)
	defer stop()
	require.Equal(t, "a", waitFor(t, kills))
	for i := 0; i < 30; i++ {
		waitWaiters(t, e.clock)
		e.step(time.Second)
	}
	// After the 30s timeout the next pass runs at once; the sample is stale,
	// so nothing more is evicted until a fresh one arrives.
	waitWaiters(t, e.clock)
	e.observe(func(n *node) { n.memAvail = Mi }, podStats(a, podUsage{mem: Gi}))
	e.m.Trigger()
	require.Equal(t, "a", waitFor(t, kills))
}

func TestRunNotifiersStopWithRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	started := make(chan func(), 1)
	n := NotifierFunc(func(ctx context.Context, notify func()) error {
		started <- notify
		<-ctx.Done()
		return nil
	})
	a := newPod("a")
	e := newEnv(t, Config{Notifiers: []Notifier{n}}, a)
	kills := make(chan string, 10)
	e.host.onKill = func(p *v1.Pod) { kills <- p.Name }
	stop := startRun(t, e.m)
	notify := waitFor(t, started)
	waitWaiters(t, e.clock)
	e.step(time.Millisecond) // a fresh sample
	e.observe(func(n *node) { n.memAvail = Mi }, podStats(a, podUsage{mem: Gi}))
	notify()
	notify() // coalesced, never blocks
	require.Equal(t, "a", waitFor(t, kills))
	stop()
}
