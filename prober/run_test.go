package prober

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/containerid"
)

// startRun runs e.m.Run until the test ends.
func (e *env) startRun(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

func TestRunDeliversUpdates(t *testing.T) {
	leakCheck(t)
	e := newEnv(t)
	pod := testPod("p", execProbe("live"), execProbe("ready"), nil)
	require.NoError(t, e.m.AddPod(pod))
	e.m.UpdatePodStatus(e.ctx, pod, runningStatus(cid, epoch))
	e.startRun(t)
	want := func(t ProbeType, r Result) Update {
		return Update{ContainerID: containerid.ID{Type: "crisim", ID: "c1"}, Result: r, PodUID: pod.UID}
	}
	require.Equal(t, want(Liveness, Success), <-e.m.Updates(Liveness))
	// The initial Failure and the first probe's Success may coalesce.
	if u := <-e.m.Updates(Readiness); u.Result != Success {
		require.Equal(t, want(Readiness, Failure), u, "initial value")
		require.Equal(t, want(Readiness, Success), <-e.m.Updates(Readiness), "first probe")
	}

	e.runner.set("live", 1)
	for range 3 {
		// Step exactly to the next probe, once Run waits for it.
		var due time.Time
		require.Eventually(t, func() bool {
			var ok bool
			due, ok = e.m.NextWake()
			return ok && due.After(e.clock.Now())
		}, 5*time.Second, time.Millisecond)
		e.clock.Step(due.Sub(e.clock.Now()))
	}
	require.Equal(t, want(Liveness, Failure), <-e.m.Updates(Liveness))
}

func TestNextProbe(t *testing.T) {
	leakCheck(t)
	e := newEnv(t)
	_, ok := e.m.NextWake()
	require.False(t, ok, "not running")
	e.startRun(t)
	require.Eventually(t, func() bool {
		next, ok := e.m.NextWake()
		return ok && next.IsZero()
	}, 5*time.Second, time.Millisecond, "waiting, nothing scheduled")
}

func TestSlowConsumerNeverBlocksWorkers(t *testing.T) {
	leakCheck(t)
	e := newEnv(t, func(c *Config) { c.Workers = 4 })
	const pods = 50
	for i := range pods {
		id := fmt.Sprintf("crisim://c%d", i)
		pod := testPod(fmt.Sprint(i), nil, execProbe("ready", func(p *v1.Probe) { p.FailureThreshold = 1 }), nil)
		require.NoError(t, e.m.AddPod(pod))
		st := runningStatus(id, epoch)
		st.ContainerStatuses[0].Started = ptr(true)
		e.m.UpdatePodStatus(e.ctx, pod, st)
	}
	e.startRun(t)
	// Nobody reads Updates(Readiness) while every result flips each period.
	const periods = 10
	for k := range periods {
		e.runner.set("ready", k%2)
		if k > 0 {
			require.Eventually(t, e.clock.HasWaiters, 5*time.Second, time.Millisecond)
			e.clock.Step(10 * time.Second)
		}
		require.Eventually(t, func() bool { return e.runner.count("ready") == pods*(k+1) && e.idle() }, 10*time.Second, time.Millisecond,
			"period %d: workers blocked", k)
	}
	require.LessOrEqual(t, e.m.results[Readiness].pendingLen(), pods, "coalesced per container")

	// The consumer wakes up: about one update per container (plus the one
	// the pump held while nobody read), and the last of each is the latest
	// result.
	last := map[containerid.ID]Result{}
	upToDate := func() bool {
		for i := range pods {
			id := containerid.ID{Type: "crisim", ID: fmt.Sprintf("c%d", i)}
			r, _ := e.m.Result(Readiness, id)
			if got, ok := last[id]; !ok || got != r {
				return false
			}
		}
		return true
	}
	n := 0
	for !upToDate() {
		u := <-e.m.Updates(Readiness)
		last[u.ContainerID] = u.Result
		n++
	}
	require.LessOrEqual(t, n, pods+1)
	require.Zero(t, e.m.results[Readiness].pendingLen())
}

// idle reports whether no probe is running.
func (e *env) idle() bool {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return len(e.m.queue) == len(e.m.workers)
}

func TestRunStopsWithProbesInFlight(t *testing.T) {
	leakCheck(t)
	e := newEnv(t)
	block := make(chan struct{})
	e.m.cfg.Runner = blockingRunner(block)
	pod := testPod("p", execProbe("live"), nil, nil)
	require.NoError(t, e.m.AddPod(pod))
	e.m.UpdatePodStatus(e.ctx, pod, runningStatus(cid, epoch))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.m.Run(ctx) }()
	<-block // the probe is running
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, 1, e.m.Probes(), "the probe stays scheduled for the next Run")
}

type blockingRunner chan struct{}

func (b blockingRunner) ExecSync(ctx context.Context, _ string, _ []string, _ time.Duration) ([]byte, []byte, error) {
	b <- struct{}{}
	<-ctx.Done()
	return nil, nil, ctx.Err()
}

func TestSinkReceivesUpdatesFromRunOnce(t *testing.T) {
	type got struct {
		t ProbeType
		u Update
	}
	var mu sync.Mutex
	var updates []got
	e := newEnv(t, func(c *Config) {
		c.Sink = func(t ProbeType, u Update) {
			mu.Lock()
			defer mu.Unlock()
			updates = append(updates, got{t, u})
		}
	})
	pod := testPod("p", execProbe("live"), nil, nil)
	require.NoError(t, e.m.AddPod(pod))
	e.m.UpdatePodStatus(e.ctx, pod, runningStatus(cid, epoch))
	e.step(0)
	id := containerid.ID{Type: "crisim", ID: "c1"}
	mu.Lock()
	require.Equal(t, []got{{Liveness, Update{ContainerID: id, Result: Success, PodUID: pod.UID}}}, updates,
		"RunOnce delivers through the sink; no Run, no receiver goroutine")
	updates = nil
	mu.Unlock()

	e.runner.set("live", 1)
	for range 3 { // failureThreshold 3
		e.step(10 * time.Second)
	}
	mu.Lock()
	require.Equal(t, []got{{Liveness, Update{ContainerID: id, Result: Failure, PodUID: pod.UID}}}, updates)
	mu.Unlock()
	require.Zero(t, e.m.results[Liveness].pendingLen(), "nothing waits for a channel")
	require.Empty(t, e.m.results[Liveness].queue, "nor queues an ID")

	// The result is found with or without the runtime type, as
	// containerid.ID.Same matches the two.
	for _, lookup := range []containerid.ID{id, {ID: "c1"}} {
		r, ok := e.m.Result(Liveness, lookup)
		require.True(t, ok, "%+v", lookup)
		require.Equal(t, Failure, r)
	}
	_, ok := e.m.Result(Liveness, containerid.ID{Type: "crisim", ID: "c2"})
	require.False(t, ok)
}

func TestResultZeroValueIsUnknown(t *testing.T) {
	var r Result
	require.Equal(t, Unknown, r)
	require.Equal(t, "Unknown", r.String())
	require.Equal(t, "Success", Success.String())
}

func TestContainerStateForAPodSyncer(t *testing.T) {
	e := newEnv(t)
	pod := testPod("p", execProbe("live"), nil, execProbe("start"))
	require.NoError(t, e.m.AddPod(pod))
	e.m.UpdatePodStatus(e.ctx, pod, runningStatus(cid, epoch))
	started, live, start := e.m.ContainerState(pod, "app", "c1")
	require.False(t, started, "a startup probe that has not passed yet")
	require.False(t, live || start, "no failure yet")

	e.runner.set("start", 1)
	for range 3 { // the startup probe's failureThreshold
		e.step(10 * time.Second)
	}
	started, _, start = e.m.ContainerState(pod, "app", "c1")
	require.False(t, started)
	require.True(t, start, "the startup probe failed: restart it")

	plain := testPod("q", execProbe("live"), nil, nil)
	require.NoError(t, e.m.AddPod(plain))
	e.m.UpdatePodStatus(e.ctx, plain, runningStatus("crisim://c2", epoch))
	e.runner.set("live", 1)
	for range 3 {
		e.step(10 * time.Second)
	}
	started, live, _ = e.m.ContainerState(plain, "app", "c2")
	require.True(t, started, "no startup probe: started")
	require.True(t, live, "found by the bare runtime ID")
}
