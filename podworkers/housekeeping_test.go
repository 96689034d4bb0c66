package podworkers

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

func TestStaticPodsRunOneAtATime(t *testing.T) {
	r := &recordingSyncer{}
	w, _ := newTestWorkers(t, r)
	ctx := context.Background()
	a, b, c := staticPod("a", "etcd"), staticPod("b", "etcd"), staticPod("c", "etcd")
	apply(t, w, update(UpdateCreate, a), update(UpdateCreate, b), update(UpdateCreate, c))
	w.ProcessPending(ctx)
	require.Equal(t, []string{"sync:create:a:1"}, r.take(), "b and c wait for a")
	require.False(t, w.IsPodForMirrorPodTerminatingByFullName("etcd_ns"))

	// c is killed while waiting: it finishes without any sync.
	apply(t, w, kill(c, nil))
	w.ProcessPending(ctx)
	require.Empty(t, r.take())
	st, _ := w.PodState("c")
	require.Equal(t, StateFinished, st)

	// a terminates; b starts as soon as a is finished.
	blocked := make(chan struct{})
	r.terminated = func(context.Context, *v1.Pod) error {
		require.True(t, w.IsPodForMirrorPodTerminatingByFullName("etcd_ns") == false)
		close(blocked)
		return nil
	}
	r.terminating = func(context.Context, *v1.Pod, int64, StatusFunc) error {
		require.True(t, w.IsPodForMirrorPodTerminatingByFullName("etcd_ns"))
		return nil
	}
	apply(t, w, update(UpdateUpdate, deleted(a, 30)))
	w.ProcessPending(ctx)
	<-blocked
	require.Equal(t, []string{"terminating:a:30", "terminated:a", "sync:create:b:1"}, r.take())

	// Pods with other full names never wait.
	apply(t, w, update(UpdateCreate, staticPod("d", "other")))
	w.ProcessPending(ctx)
	require.Equal(t, []string{"sync:create:d:1"}, r.take())
}

func TestSyncKnownPods(t *testing.T) {
	r := &recordingSyncer{}
	w, _ := newTestWorkers(t, r)
	ctx := context.Background()
	running, finished, unstarted := newPod("run", "r", "1"), newPod("fin", "f", "1"), newPod("new", "n", "1")
	apply(t, w, update(UpdateCreate, running), update(UpdateCreate, finished))
	w.ProcessPending(ctx)
	apply(t, w, kill(finished, nil))
	w.ProcessPending(ctx)
	apply(t, w, update(UpdateCreate, unstarted)) // not processed yet
	r.take()

	// Before the first SyncKnownPods unknown pods may be running.
	require.True(t, w.CouldHaveRunningContainers("ghost"))
	require.False(t, w.ShouldPodContentBeRemoved("ghost"))
	require.False(t, w.ShouldPodBeFinished("ghost"))

	known := w.SyncKnownPods(ctx, sets.New[types.UID]("fin"))
	require.Equal(t, map[types.UID]WorkerSync{
		"run": {State: StateTerminating, Orphan: true, HasConfig: true},
		"fin": {State: StateFinished, HasConfig: true},
	}, known, "the unstarted orphan is forgotten, the running orphan terminates")
	require.True(t, w.ShouldPodContainersBeTerminating("ghost"))
	require.True(t, w.ShouldPodRuntimeBeRemoved("ghost"))
	require.False(t, w.CouldHaveRunningContainers("ghost"))
	require.True(t, w.ShouldPodBeFinished("ghost"))
	require.False(t, w.IsPodKnownTerminated("ghost"))

	w.ProcessPending(ctx)
	require.Equal(t, []string{"terminating:run:30", "terminated:run"}, r.take(), "no SyncPod for the unstarted orphan")
	require.True(t, w.ShouldPodContentBeRemoved("run"), "an orphan counts as deleted")

	known = w.SyncKnownPods(ctx, nil)
	require.Empty(t, known)
	require.Empty(t, w.pods)
	require.Zero(t, w.dueLen())
}

func TestQueriesThroughLifecycle(t *testing.T) {
	r := &recordingSyncer{}
	w, _ := newTestWorkers(t, r)
	ctx := context.Background()
	p := newPod("a", "pa", "1")
	type answers struct{ terminated, requested, couldRun, containersTerminating, runtimeRemoved, contentRemoved, finished bool }
	get := func() answers {
		return answers{w.IsPodKnownTerminated("a"), w.IsPodTerminationRequested("a"), w.CouldHaveRunningContainers("a"),
			w.ShouldPodContainersBeTerminating("a"), w.ShouldPodRuntimeBeRemoved("a"), w.ShouldPodContentBeRemoved("a"), w.ShouldPodBeFinished("a")}
	}
	apply(t, w, update(UpdateCreate, p))
	w.ProcessPending(ctx)
	require.Equal(t, answers{couldRun: true}, get())

	var during answers
	r.terminating = func(context.Context, *v1.Pod, int64, StatusFunc) error { during = get(); return nil }
	var cleanup answers
	r.terminated = func(context.Context, *v1.Pod) error { cleanup = get(); return nil }
	apply(t, w, update(UpdateUpdate, deleted(p, 10)))
	require.Equal(t, answers{requested: true, couldRun: true}, get(), "not yet observed by a worker")
	w.ProcessPending(ctx)
	require.Equal(t, answers{requested: true, couldRun: true, containersTerminating: true}, during)
	require.Equal(t, answers{terminated: true, requested: true, containersTerminating: true, runtimeRemoved: true, contentRemoved: true}, cleanup)
	require.Equal(t, answers{terminated: true, requested: true, containersTerminating: true, runtimeRemoved: true, contentRemoved: true, finished: true}, get())
}

func TestRequeueTiming(t *testing.T) {
	tests := []struct {
		name      string
		rand      float64
		fail      bool
		wantDelay time.Duration
	}{
		{name: "resync without jitter", rand: 0, wantDelay: time.Minute},
		{name: "resync with full jitter", rand: 0.999999, wantDelay: 90 * time.Second},
		{name: "resync with half jitter", rand: 0.5, wantDelay: 75 * time.Second},
		{name: "backoff without jitter", rand: 0, fail: true, wantDelay: 10 * time.Second},
		{name: "backoff with half jitter", rand: 0.5, fail: true, wantDelay: 12500 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &recordingSyncer{}
			if tc.fail {
				r.syncPod = func(context.Context, UpdateType, *v1.Pod) (bool, error) { return false, errors.New("fail") }
			}
			w, clk := newTestWorkers(t, r, func(c *Config) {
				c.ResyncJitter, c.BackOffJitter = 0, 0 // defaults: 50%
				c.Rand = func() float64 { return tc.rand }
			})
			_, ok := w.NextDue()
			require.False(t, ok)
			apply(t, w, update(UpdateCreate, newPod("a", "pa", "1")))
			w.ProcessPending(context.Background())
			next, ok := w.NextDue()
			require.True(t, ok)
			require.Equal(t, tc.wantDelay, next.Sub(epoch).Round(time.Millisecond))
			clk.Step(next.Sub(epoch) - time.Millisecond)
			require.Empty(t, w.DuePods())
			clk.Step(time.Millisecond)
			require.Equal(t, []types.UID{"a"}, w.DuePods())
			require.Empty(t, w.DuePods(), "DuePods dequeues")
		})
	}
}

func TestResync(t *testing.T) {
	r := &recordingSyncer{}
	w, _ := newTestWorkers(t, r)
	ctx := context.Background()
	require.ErrorIs(t, w.Resync("nope"), ErrUnknownPod)
	p := newPod("a", "pa", "1")
	apply(t, w, update(UpdateUpdate, p))
	w.ProcessPending(ctx)
	require.NoError(t, w.Resync("a"))
	w.ProcessPending(ctx)
	require.Equal(t, []string{"sync:update:a:1", "sync:sync:a:1"}, r.take())
	apply(t, w, kill(p, nil))
	w.ProcessPending(ctx)
	require.NoError(t, w.Resync("a"), "no-op once finished")
	require.Zero(t, w.ProcessPending(ctx))
}

func TestBadInput(t *testing.T) {
	r := &recordingSyncer{}
	w, _ := newTestWorkers(t, r)
	ctx := context.Background()
	tests := []struct {
		name string
		u    Update
	}{
		{name: "no pod", u: Update{Type: UpdateKill}},
		{name: "empty UID", u: Update{Type: UpdateCreate, Pod: newPod("", "x", "1")}},
		{name: "empty runtime UID", u: Update{Type: UpdateKill, RunningPod: &RuntimePod{Name: "x"}}},
		{name: "unknown type", u: Update{Type: UpdateType(9), Pod: newPod("a", "x", "1")}},
		{name: "negative type", u: Update{Type: UpdateType(-1), Pod: newPod("a", "x", "1")}},
		{name: "runtime pod sync", u: Update{Type: UpdateSync, RunningPod: &RuntimePod{UID: "o"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, w.UpdatePod(ctx, tc.u), ErrInvalidUpdate)
		})
	}
	require.Empty(t, w.pods)
	require.Zero(t, w.ProcessPending(ctx))
	require.Empty(t, r.take())
}

func TestNewValidates(t *testing.T) {
	s := &recordingSyncer{}
	tests := []struct {
		name string
		cfg  Config
	}{
		{name: "no syncer", cfg: Config{}},
		{name: "negative resync", cfg: Config{Syncer: s, ResyncInterval: -time.Second}},
		{name: "negative backoff", cfg: Config{Syncer: s, BackOffPeriod: -time.Second}},
		{name: "backoff above resync", cfg: Config{Syncer: s, ResyncInterval: time.Second, BackOffPeriod: time.Minute}},
		{name: "negative concurrency", cfg: Config{Syncer: s, MaxConcurrentSyncs: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			require.ErrorIs(t, err, ErrInvalidConfig)
		})
	}
	w, err := New(Config{Syncer: s})
	require.NoError(t, err)
	require.Equal(t, DefaultResyncInterval, w.cfg.ResyncInterval)
	require.Equal(t, DefaultBackOffPeriod, w.cfg.BackOffPeriod)
	require.Equal(t, DefaultResyncJitter, w.cfg.ResyncJitter)
}

func TestStateZeroValueIsNotAState(t *testing.T) {
	var s State
	require.Equal(t, "unknown", s.String())
	for _, st := range []State{StateSyncing, StateTerminating, StateTerminated, StateFinished} {
		require.NotEqual(t, s, st)
		require.NotEqual(t, "unknown", st.String())
	}
}

// TestWorkQueueStaleEntries: a pod synced again before its resync is due
// leaves its earlier place in the queue behind; DuePods must skip it, give
// the pod once at its new time, never give a pod forgotten since, and the
// queue must not grow with reschedules.
func TestWorkQueueStaleEntries(t *testing.T) {
	r := &recordingSyncer{}
	w, clk := newTestWorkers(t, r) // no jitter: resyncs a minute after a sync
	ctx := context.Background()
	a, gone := newPod("a", "pa", "1"), newPod("gone", "pg", "1")
	apply(t, w, update(UpdateCreate, a), update(UpdateCreate, gone))
	w.ProcessPending(ctx) // both due at +60s

	clk.Step(10 * time.Second)
	require.NoError(t, w.Resync("a"))
	w.ProcessPending(ctx) // a: due at +70s now
	apply(t, w, kill(gone, nil))
	w.ProcessPending(ctx)
	w.SyncKnownPods(ctx, sets.New[types.UID]("a")) // gone is forgotten
	next, ok := w.NextDue()
	require.True(t, ok)
	require.Equal(t, 70*time.Second, next.Sub(epoch), "the stale +60s entries are not the next due")

	clk.Step(50 * time.Second)
	require.Empty(t, w.DuePods(), "at +60s: only stale entries")
	clk.Step(10 * time.Second)
	require.Equal(t, []types.UID{"a"}, w.DuePods())
	require.Empty(t, w.DuePods())

	for range 500 { // each sync queues a again
		require.NoError(t, w.Resync("a"))
		w.ProcessPending(ctx)
	}
	w.mu.Lock()
	require.LessOrEqual(t, len(w.queue), len(w.pods)+len(w.pods)/4+65, "rebuilt when a fifth may be stale")
	w.mu.Unlock()
	clk.Step(time.Minute)
	require.Equal(t, []types.UID{"a"}, w.DuePods(), "once, whatever the stale entries")
	require.Empty(t, w.DuePods())
	_, ok = w.NextDue()
	require.False(t, ok)
}

// TestWorkQueueForgetsDeletedPods: pods deleted and forgotten leave no
// entries behind in the work queue (they would keep the records alive
// until their resync time).
func TestWorkQueueForgetsDeletedPods(t *testing.T) {
	r := &recordingSyncer{}
	w, _ := newTestWorkers(t, r)
	ctx := context.Background()
	var pods []*v1.Pod
	for i := range 1000 {
		p := newPod(fmt.Sprintf("u%d", i), fmt.Sprintf("p%d", i), "1")
		pods = append(pods, p)
		apply(t, w, update(UpdateCreate, p))
	}
	w.ProcessPending(ctx)
	require.Equal(t, 1000, w.dueLen())
	for _, p := range pods {
		apply(t, w, kill(p, nil))
	}
	w.ProcessPending(ctx)
	w.SyncKnownPods(ctx, nil)
	require.Empty(t, w.pods)
	w.mu.Lock()
	defer w.mu.Unlock()
	require.LessOrEqual(t, len(w.queue), 64, "rebuilt as the pods went")
	require.LessOrEqual(t, cap(w.queue), 2*64, "and its array shrunk")
}
