package syncloop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/prober"
)

const wait = 5 * time.Second

// startLoop runs l and returns a stop func that cancels it and checks that
// Run returned want promptly.
func startLoop(t *testing.T, l *Loop) func(want error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	return func(want error) {
		cancel()
		select {
		case err := <-done:
			if want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, want)
			}
		case <-time.After(wait):
			t.Fatal("Run did not return within 5s of cancel")
		}
	}
}

func eventually(t *testing.T, f func() bool, msg string) {
	t.Helper()
	require.Eventually(t, f, wait, time.Millisecond, msg)
}

func TestRunRoutesEveryChannel(t *testing.T) {
	defer goleak.VerifyNone(t)
	rec := &recorder{}
	clk := clocktesting.NewFakeClock(t0)
	src := newTestSource("a")
	var due atomic.Bool
	l, err := New(Config{
		Handler: rec, Sources: []Source{src}, Clock: clk,
		PodsToSync: func() []types.UID {
			if due.Load() {
				return []types.UID{"d"}
			}
			return nil
		},
		PodByUID: func(uid types.UID) (*v1.Pod, bool) {
			if uid == "d" {
				return testPod("due", "d"), true
			}
			return testPod("p1", "u1"), uid == "u1"
		},
	})
	require.NoError(t, err)
	stop := startLoop(t, l)
	set := <-src.set
	ctx := context.Background()

	expect := func(want ...string) {
		t.Helper()
		eventually(t, func() bool { return rec.len() >= len(want) }, fmt.Sprint(want))
		require.Equal(t, want, rec.take())
	}
	set(ctx, []*v1.Pod{testPod("p1", "u1")})
	expect("ADD p1")
	l.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: "u1", Type: pleg.ContainerDied, ContainerID: containerid.ID{ID: "c"}})
	expect("SYNC p1")
	l.HandleProbeUpdate(prober.Liveness, prober.Update{ContainerID: containerid.ID{Type: "c", ID: "c"}, PodUID: "u1", Result: prober.Failure})
	expect("SYNC p1")

	due.Store(true)
	eventually(t, clk.HasWaiters, "loop parked on its timer")
	clk.Step(time.Second)
	expect("SYNC due")
	eventually(t, clk.HasWaiters, "loop parked on its timer")
	clk.Step(time.Second)
	expect("SYNC due", "CLEANUP ")
	require.True(t, l.SourcesReady())
	require.True(t, clk.Now().Equal(l.LastIteration()))
	stop(nil)
}

func TestRunUnhealthyRuntimeNeverBlocksSources(t *testing.T) {
	defer goleak.VerifyNone(t)
	rec := &recorder{}
	clk := clocktesting.NewFakeClock(t0)
	src := newTestSource("a")
	var healthy atomic.Bool
	var checks atomic.Int32
	l, err := New(Config{
		Handler: rec, Sources: []Source{src}, Clock: clk,
		RuntimeHealth: func() error {
			checks.Add(1)
			if healthy.Load() {
				return nil
			}
			return errors.New("container runtime is down")
		},
	})
	require.NoError(t, err)
	stop := startLoop(t, l)
	set := <-src.set
	ctx := context.Background()

	// 1,000 snapshots go through while the loop is parked in backoff.
	eventually(t, clk.HasWaiters, "loop parked on its backoff timer")
	for i := range 1000 {
		set(ctx, []*v1.Pod{testPod(fmt.Sprintf("p%d", i%10), types.UID(fmt.Sprintf("u%d", i%10)))})
	}
	require.Equal(t, int32(1), checks.Load(), "input does not wake the loop while unhealthy")
	for _, d := range []time.Duration{100, 200, 400} {
		want := checks.Load() + 1 // read before the step: the loop may check at once
		clk.Step(d * time.Millisecond)
		eventually(t, func() bool { return checks.Load() == want && clk.HasWaiters() }, "one health check per backoff step")
	}
	require.Zero(t, rec.len())

	healthy.Store(true)
	clk.Step(800 * time.Millisecond)
	eventually(t, func() bool { return rec.len() >= 1999 }, "recorded updates dispatched")
	got := rec.take()
	require.Equal(t, "ADD p0", got[0])
	require.Equal(t, "ADD p9", got[len(got)-1])
	stop(nil)
}

func TestProbeAndPLEGPublishersNeverBlock(t *testing.T) {
	defer goleak.VerifyNone(t)
	rec := &recorder{block: make(chan struct{})}
	src := newTestSource("a")
	l, err := New(Config{Handler: rec, Sources: []Source{src}, Clock: clocktesting.NewFakeClock(t0)})
	require.NoError(t, err)
	stop := startLoop(t, l)
	set := <-src.set
	set(context.Background(), []*v1.Pod{testPod("p1", "u1")})
	eventually(t, func() bool { return rec.len() == 1 }, "handler is now blocked in ADD")

	// The handler is stuck; 8 publishers × 10,000 results must still finish.
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 10000 {
				l.HandleProbeUpdate(prober.ProbeType(i%3), prober.Update{ContainerID: containerid.ID{Type: "c", ID: fmt.Sprint(w)}, PodUID: "u1", Result: prober.Result(i % 2)})
				l.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: "u1", Type: pleg.ContainerStarted, ContainerID: containerid.ID{ID: "x"}})
			}
		})
	}
	wg.Wait()
	l.in.mu.Lock()
	require.LessOrEqual(t, len(l.in.probeQ), 24, "results coalesce per probe and container")
	require.Len(t, l.in.plegQ, 1, "events coalesce per pod")
	l.in.mu.Unlock()
	close(rec.block)
	eventually(t, func() bool { return rec.len() >= 2 }, "queued work dispatched after the handler returns")
	stop(nil)
}

type failingSource struct{}

func (failingSource) Name() string { return "bad" }
func (failingSource) Run(context.Context, SetFunc) error {
	return errors.New("cannot start")
}

func TestRunReturnsSourceError(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := newTestSource("a")
	l, err := New(Config{Handler: &recorder{}, Sources: []Source{src, failingSource{}}, Clock: clocktesting.NewFakeClock(t0)})
	require.NoError(t, err)
	err = l.Run(context.Background())
	require.ErrorContains(t, err, `source "bad": cannot start`)
}

func TestNextIteration(t *testing.T) {
	defer goleak.VerifyNone(t)
	rec := &recorder{}
	clk := clocktesting.NewFakeClock(t0)
	var health atomic.Pointer[error]
	l, err := New(Config{Handler: rec, ExternalSources: []string{"api"}, Clock: clk,
		RuntimeHealth: func() error {
			if e := health.Load(); e != nil {
				return *e
			}
			return nil
		}})
	require.NoError(t, err)
	_, ok := l.NextWake()
	require.False(t, ok, "not running")
	stop := startLoop(t, l)
	parked := func() time.Time {
		t.Helper()
		var next time.Time
		eventually(t, func() bool { next, ok = l.NextWake(); return ok && next.After(clk.Now()) }, "parked")
		return next
	}
	require.True(t, t0.Add(DefaultSyncPeriod).Equal(parked()), "the sync tick is next")

	// While the handler works the loop is not parked.
	gate := make(chan struct{})
	rec.mu.Lock()
	rec.block = gate
	rec.mu.Unlock()
	l.Set(context.Background(), "api", []*v1.Pod{testPod("p1", "u1")})
	eventually(t, func() bool { return rec.len() == 1 }, "handler called")
	_, ok = l.NextWake()
	require.False(t, ok, "an iteration in progress")
	rec.mu.Lock()
	rec.block = nil
	rec.mu.Unlock()
	close(gate)
	parked()
	require.Equal(t, []string{"ADD p1"}, rec.take())

	down := errors.New("runtime down")
	health.Store(&down)
	clk.Step(DefaultSyncPeriod)
	var next time.Time
	eventually(t, func() bool { next, ok = l.NextWake(); return ok && next.After(clk.Now()) }, "parked on the backoff")
	require.True(t, clk.Now().Add(DefaultBackoffInitial).Equal(next), "next %v", next)
	l.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: "u1", Type: pleg.ContainerDied, ContainerID: containerid.ID{ID: "c"}})
	next2, ok := l.NextWake()
	require.True(t, ok && next2.Equal(next), "input does not wake a loop waiting for the runtime")

	health.Store(nil)
	clk.Step(DefaultBackoffInitial)
	parked()
	require.Equal(t, []string{"SYNC p1"}, rec.take(), "queued input dispatched on recovery")
	stop(nil)
	_, ok = l.NextWake()
	require.False(t, ok, "stopped")
}
