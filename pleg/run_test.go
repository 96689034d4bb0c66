package pleg

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// running starts g.Run and returns a stop function that cancels it and
// checks it returned nil.
func running(t *testing.T, g *Generator) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- g.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-errc:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return")
		}
	}
	t.Cleanup(stop)
	return stop
}

func (e *env) waitWaiters(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return e.clock.Waiters() == n }, 5*time.Second, time.Millisecond,
		"fake clock never had %d waiters (has %d)", n, e.clock.Waiters())
}

func TestRunRelistsPeriodically(t *testing.T) {
	e := newEnv(t)
	g := e.gen(t, Config{})
	sb := e.runPod(t, "web")
	stop := running(t, g)

	require.Equal(t, ev(uidOf("web"), ContainerStarted, sb), next(t, g), "first relist at once")
	var due time.Time
	require.Eventually(t, func() bool {
		var ok bool
		due, ok = g.NextWake()
		return ok
	}, 5*time.Second, time.Millisecond, "Run waits for its next relist")
	require.True(t, e.clock.Now().Add(time.Second).Equal(due), "due %v", due)
	app := e.startContainer(t, sb, "web", "app")
	e.clock.Step(due.Sub(e.clock.Now()))
	require.Equal(t, ev(uidOf("web"), ContainerStarted, app), next(t, g))
	e.waitWaiters(t, 1)

	// RequestRelist does not wait for the period.
	side := e.startContainer(t, sb, "web", "side")
	g.RequestRelist(uidOf("web"))
	require.Equal(t, ev(uidOf("web"), ContainerStarted, side), next(t, g))

	// Second Run is refused while the first runs.
	require.ErrorIs(t, g.Run(context.Background()), errAlreadyRunning)
	stop()
	require.NoError(t, g.Healthy())
	_, waiting := g.NextWake()
	require.False(t, waiting, "not running")
}

func TestRunPaysDebtsToSlowConsumer(t *testing.T) {
	e := newEnv(t)
	g := e.gen(t, Config{EventChannelCapacity: 1})
	for i := range 5 {
		e.runPod(t, fmt.Sprint("pod", i))
	}
	running(t, g)
	heard := map[types.UID]bool{}
	for len(heard) < 5 {
		heard[next(t, g).ID] = true // no clock step: Run's deliverer pays debts
	}
	require.LessOrEqual(t, g.CoalescedEvents(), uint64(4))
}

func TestRunSkipsRequestsCoveredByARelist(t *testing.T) {
	e := newEnv(t)
	g := e.gen(t, Config{})
	e.runPod(t, "web")
	relist(t, g)
	drain(g)
	g.RequestRelist(uidOf("web"))
	e.clock.Step(time.Second)
	relist(t, g) // started after the request
	calls := e.sim.Calls("ListPodSandbox")
	_, pods := g.takeRequests()
	g.relistPods(context.Background(), pods)
	require.Equal(t, calls, e.sim.Calls("ListPodSandbox"), "the request was served by the full relist")
}

func TestConfigCacheAndUIDs(t *testing.T) {
	e := newEnv(t)
	cache := NewCache()
	g := e.gen(t, Config{Cache: cache})
	require.Same(t, cache, g.Cache())
	_, err := New(Config{Runtime: e.rt, Cache: cache})
	require.ErrorIs(t, err, ErrInvalidConfig, "one generator per cache")
	e.runPod(t, "web")
	e.runPod(t, "db")
	relist(t, g)
	require.ElementsMatch(t, []types.UID{uidOf("web"), uidOf("db")}, cache.UIDs())
}
