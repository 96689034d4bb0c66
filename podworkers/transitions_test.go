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
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

// phase sends updates, runs ProcessPending and checks the Syncer calls.
type phase struct {
	send []Update
	want []string
}

func TestTransitions(t *testing.T) {
	a1, a2, a3 := newPod("a", "pa", "1"), newPod("a", "pa", "2"), newPod("a", "pa", "3")
	failed := a2.DeepCopy()
	failed.Status.Phase = v1.PodFailed
	noGrace := a1.DeepCopy()
	noGrace.Spec.TerminationGracePeriodSeconds = nil

	tests := []struct {
		name   string
		setup  func(r *recordingSyncer, w *Workers)
		phases []phase
		final  State
	}{{
		name: "full lifecycle",
		phases: []phase{
			{send: []Update{update(UpdateCreate, a1)}, want: []string{"sync:create:a:1"}},
			{send: []Update{update(UpdateUpdate, a2)}, want: []string{"sync:update:a:2"}},
			{send: []Update{kill(a2, nil)}, want: []string{"terminating:a:30", "terminated:a"}},
		},
		final: StateFinished,
	}, {
		name: "coalescing keeps only the latest pending update",
		phases: []phase{
			{send: []Update{update(UpdateCreate, a1), update(UpdateUpdate, a2), update(UpdateSync, a3)}, want: []string{"sync:sync:a:3"}},
		},
		final: StateSyncing,
	}, {
		name: "a later update does not lose a pending kill",
		phases: []phase{
			{send: []Update{update(UpdateCreate, a1)}, want: []string{"sync:create:a:1"}},
			{send: []Update{kill(a1, ptr.To[int64](7)), update(UpdateUpdate, a2)}, want: []string{"terminating:a:7", "terminated:a"}},
		},
		final: StateFinished,
	}, {
		name: "deletion during create skips SyncPod",
		phases: []phase{
			{send: []Update{update(UpdateCreate, a1), update(UpdateUpdate, deleted(a2, 12))}, want: []string{"terminating:a:12", "terminated:a"}},
		},
		final: StateFinished,
	}, {
		name: "terminal SyncPod moves on to terminating with the spec grace period",
		setup: func(r *recordingSyncer, _ *Workers) {
			r.syncPod = func(context.Context, UpdateType, *v1.Pod) (bool, error) { return true, nil }
		},
		phases: []phase{
			{send: []Update{update(UpdateCreate, a1)}, want: []string{"sync:create:a:1", "terminating:a:30", "terminated:a"}},
		},
		final: StateFinished,
	}, {
		name: "terminal phase from config terminates",
		phases: []phase{
			{send: []Update{update(UpdateCreate, a1)}, want: []string{"sync:create:a:1"}},
			{send: []Update{update(UpdateUpdate, failed)}, want: []string{"terminating:a:30", "terminated:a"}},
		},
		final: StateFinished,
	}, {
		name: "no terminationGracePeriodSeconds means the API default",
		phases: []phase{
			{send: []Update{update(UpdateCreate, noGrace), kill(noGrace, nil)}, want: []string{"terminating:a:30", "terminated:a"}},
		},
		final: StateFinished,
	}, {
		name: "kill during sync cancels it",
		setup: func(r *recordingSyncer, w *Workers) {
			r.syncPod = func(ctx context.Context, _ UpdateType, pod *v1.Pod) (bool, error) {
				if err := w.UpdatePod(context.Background(), kill(pod, ptr.To[int64](5))); err != nil {
					return false, err
				}
				<-ctx.Done()
				return false, ctx.Err()
			}
		},
		phases: []phase{
			{send: []Update{update(UpdateCreate, a1)}, want: []string{"sync:create:a:1", "terminating:a:5", "terminated:a"}},
		},
		final: StateFinished,
	}, {
		name: "shorter grace period during terminating cancels and restarts it",
		setup: func(r *recordingSyncer, w *Workers) {
			first := true
			r.terminating = func(ctx context.Context, pod *v1.Pod, _ int64, _ StatusFunc) error {
				if !first {
					return nil
				}
				first = false
				if err := w.UpdatePod(context.Background(), Update{Type: UpdateUpdate, Pod: deleted(pod, 3)}); err != nil {
					return err
				}
				<-ctx.Done()
				return ctx.Err()
			}
		},
		phases: []phase{
			{send: []Update{update(UpdateCreate, a1)}, want: []string{"sync:create:a:1"}},
			{send: []Update{kill(a1, ptr.To[int64](20))}, want: []string{"terminating:a:20", "terminating:a:3", "terminated:a"}},
		},
		final: StateFinished,
	}, {
		name: "terminating error is retried by a resync with the same grace period",
		setup: func(r *recordingSyncer, _ *Workers) {
			n := 0
			r.terminating = func(context.Context, *v1.Pod, int64, StatusFunc) error {
				n++
				if n == 1 {
					return errors.New("runtime down")
				}
				return nil
			}
		},
		phases: []phase{
			{send: []Update{update(UpdateCreate, a1)}, want: []string{"sync:create:a:1"}},
			{send: []Update{kill(a1, ptr.To[int64](9))}, want: []string{"terminating:a:9"}},
			{send: []Update{update(UpdateSync, a1)}, want: []string{"terminating:a:9", "terminated:a"}},
		},
		final: StateFinished,
	}, {
		name: "updates after finished are ignored",
		phases: []phase{
			{send: []Update{update(UpdateCreate, a1), kill(a1, nil)}, want: []string{"terminating:a:30", "terminated:a"}},
			{send: []Update{update(UpdateUpdate, a2), update(UpdateSync, a2), kill(a2, nil)}, want: nil},
		},
		final: StateFinished,
	}, {
		name: "kill of an unknown pod terminates it",
		phases: []phase{
			{send: []Update{kill(a1, nil)}, want: []string{"terminating:a:30", "terminated:a"}},
		},
		final: StateFinished,
	}, {
		name: "panic is recovered and retried",
		setup: func(r *recordingSyncer, _ *Workers) {
			n := 0
			r.syncPod = func(context.Context, UpdateType, *v1.Pod) (bool, error) {
				n++
				if n == 1 {
					panic("boom")
				}
				return false, nil
			}
		},
		phases: []phase{
			{send: []Update{update(UpdateCreate, a1)}, want: []string{"sync:create:a:1"}},
			{send: []Update{update(UpdateSync, a1)}, want: []string{"sync:sync:a:1"}},
		},
		final: StateSyncing,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &recordingSyncer{}
			w, _ := newTestWorkers(t, r)
			if tc.setup != nil {
				tc.setup(r, w)
			}
			for i, ph := range tc.phases {
				apply(t, w, ph.send...)
				w.ProcessPending(context.Background())
				require.Equal(t, ph.want, r.take(), "phase %d", i)
			}
			st, ok := w.PodState("a")
			require.True(t, ok)
			require.Equal(t, tc.final, st)
		})
	}
}

func TestRestartSameUIDAfterFinish(t *testing.T) {
	r := &recordingSyncer{}
	w, _ := newTestWorkers(t, r)
	ctx := context.Background()
	p := newPod("a", "pa", "1")
	apply(t, w, update(UpdateCreate, p))
	w.ProcessPending(ctx)
	apply(t, w, kill(p, nil))
	w.ProcessPending(ctx)
	require.Equal(t, []string{"sync:create:a:1", "terminating:a:30", "terminated:a"}, r.take())

	// A create for the same UID is only remembered while the old pod exists.
	apply(t, w, update(UpdateCreate, newPod("a", "pa", "2")))
	w.ProcessPending(ctx)
	require.Empty(t, r.take())

	known := w.SyncKnownPods(ctx, sets.New[types.UID]("a"))
	require.NotContains(t, known, types.UID("a"), "restart requested: forgotten so the host re-creates it")
	_, ok := w.PodState("a")
	require.False(t, ok)

	apply(t, w, update(UpdateCreate, newPod("a", "pa", "2")))
	w.ProcessPending(ctx)
	require.Equal(t, []string{"sync:create:a:2"}, r.take())
	require.False(t, w.IsPodTerminationRequested("a"))
}

func TestRuntimePodKill(t *testing.T) {
	r := &recordingSyncer{}
	w, _ := newTestWorkers(t, r)
	ctx := context.Background()
	done := make(chan struct{})
	rp := &RuntimePod{UID: "orphan", Name: "o", Namespace: "ns"}
	require.NoError(t, w.UpdatePod(ctx, Update{Type: UpdateKill, RunningPod: rp, Kill: &KillOptions{Completed: done}}))
	require.True(t, w.IsPodTerminationRequested("orphan"))
	w.ProcessPending(ctx)
	require.Equal(t, []string{"runtime:orphan"}, r.take())
	<-done
	_, ok := w.PodState("orphan")
	require.False(t, ok, "a runtime pod is forgotten once terminated")

	// A runtime kill of a pod known with config uses the config.
	p := newPod("b", "pb", "1")
	apply(t, w, update(UpdateCreate, p))
	w.ProcessPending(ctx)
	require.NoError(t, w.UpdatePod(ctx, Update{Type: UpdateKill, RunningPod: &RuntimePod{UID: "b"}}))
	w.ProcessPending(ctx)
	require.Equal(t, []string{"sync:create:b:1", "terminating:b:30", "terminated:b"}, r.take())
	require.True(t, w.ShouldPodContentBeRemoved("b"), "orphaned pods count as deleted")
}

func TestCompletedAndStatusFunc(t *testing.T) {
	r := &recordingSyncer{}
	var got []string
	r.terminating = func(_ context.Context, _ *v1.Pod, _ int64, fn StatusFunc) error {
		s := &v1.PodStatus{}
		if fn != nil {
			fn(s)
		}
		got = append(got, s.Reason)
		return nil
	}
	w, _ := newTestWorkers(t, r)
	ctx := context.Background()
	p := newPod("a", "pa", "1")
	apply(t, w, update(UpdateCreate, p))
	w.ProcessPending(ctx)

	c1, c2 := make(chan struct{}), make(chan struct{})
	setReason := func(reason string) StatusFunc { return func(s *v1.PodStatus) { s.Reason = reason } }
	apply(t, w,
		Update{Type: UpdateKill, Pod: p, Kill: &KillOptions{Completed: c1, StatusFunc: setReason("Preempting")}},
		Update{Type: UpdateKill, Pod: p, Kill: &KillOptions{Completed: c2, Evict: true, StatusFunc: setReason("Evicted")}})
	require.True(t, w.ShouldPodContentBeRemoved("a"), "eviction allows content removal at once")
	w.ProcessPending(ctx)
	<-c1
	<-c2
	require.Equal(t, []string{"Evicted"}, got, "the latest status func wins")

	c3 := make(chan struct{})
	apply(t, w, Update{Type: UpdateKill, Pod: p, Kill: &KillOptions{Completed: c3}})
	<-c3 // closed at once for a finished pod

	// A kill option on a non-terminating update is closed at once too.
	q := newPod("b", "pb", "1")
	c4 := make(chan struct{})
	apply(t, w, Update{Type: UpdateCreate, Pod: q, Kill: &KillOptions{Completed: c4}})
	<-c4
}

func TestStatusBarrier(t *testing.T) {
	r := &recordingSyncer{}
	var afters []int64
	fail := true
	barrier := func(_ context.Context, _ types.UID, after time.Time) error {
		afters = append(afters, after.Unix())
		if fail {
			fail = false
			return errors.New("pleg not ready")
		}
		return nil
	}
	rec := record.NewFakeRecorder(4)
	w, clk := newTestWorkers(t, r, func(c *Config) { c.StatusBarrier = barrier; c.Recorder = rec })
	ctx := context.Background()
	p := newPod("a", "pa", "1")
	apply(t, w, update(UpdateCreate, p))
	w.ProcessPending(ctx)
	require.Empty(t, r.take(), "no sync without fresh status")
	require.Equal(t, "Warning FailedSync error determining status: pleg not ready", <-rec.Events)

	clk.Step(DefaultBackOffPeriod)
	require.Equal(t, []types.UID{"a"}, w.DuePods())
	apply(t, w, update(UpdateSync, p))
	w.ProcessPending(ctx)
	require.Equal(t, []string{"sync:sync:a:1"}, r.take())
	require.Equal(t, []int64{(time.Time{}).Unix(), epoch.Unix()}, afters, "the barrier waits for status newer than the previous sync")

	// Runtime pods need no status.
	require.NoError(t, w.UpdatePod(ctx, Update{Type: UpdateKill, RunningPod: &RuntimePod{UID: "o"}}))
	w.ProcessPending(ctx)
	require.Len(t, afters, 2)
}

// retryIn is a sync error that asks for its own retry delay.
type retryIn time.Duration

func (r retryIn) Error() string             { return "volume not ready" }
func (r retryIn) RetryAfter() time.Duration { return time.Duration(r) }

func TestSyncErrorRetryAfter(t *testing.T) {
	r := &recordingSyncer{}
	var errs []error
	r.syncPod = func(context.Context, UpdateType, *v1.Pod) (bool, error) {
		err := errs[0]
		errs = errs[1:]
		return false, err
	}
	w, clk := newTestWorkers(t, r)
	ctx := context.Background()
	p := newPod("a", "pa", "1")
	// Wrapped, it is found; zero falls back to BackOffPeriod.
	errs = []error{fmt.Errorf("mount: %w", retryIn(500*time.Millisecond)), errors.Join(errors.New("x"), retryIn(0)), nil}
	apply(t, w, update(UpdateCreate, p))
	w.ProcessPending(ctx)
	clk.Step(499 * time.Millisecond)
	require.Empty(t, w.DuePods(), "not before the error's delay")
	clk.Step(time.Millisecond)
	require.Equal(t, []types.UID{"a"}, w.DuePods())
	apply(t, w, update(UpdateSync, p))
	w.ProcessPending(ctx)
	clk.Step(DefaultBackOffPeriod - time.Millisecond)
	require.Empty(t, w.DuePods(), "a zero delay is the backoff period")
	clk.Step(time.Millisecond)
	require.Equal(t, []types.UID{"a"}, w.DuePods())
	apply(t, w, update(UpdateSync, p))
	w.ProcessPending(ctx)
	require.Len(t, r.take(), 3)
	require.Empty(t, errs)
}
