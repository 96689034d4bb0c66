package podworkerstest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/podworkers"
	"github.com/nodekit/nodekit/podworkers/podworkerstest"
)

var errBoom = errors.New("boom")

// testCtx bounds every wait of a test; nothing in these tests sleeps.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newPod returns a pod named after its UID with a 30s grace period.
func newPod(uid string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: "pod-" + uid, Namespace: "ns"},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](30)},
	}
}

// goCall runs f in a goroutine and returns a channel with its error.
func goCall(f func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	return done
}

func TestSyncerRecordsAndScripts(t *testing.T) {
	ctx := testCtx(t)
	s := &podworkerstest.Syncer{}
	a, b := newPod("a"), newPod("b")
	s.SetError(podworkerstest.MethodSyncPod, "a", errBoom)
	s.SetTerminal("b", true)

	terminal, err := s.SyncPod(ctx, podworkers.UpdateCreate, a, nil)
	require.ErrorIs(t, err, errBoom)
	require.False(t, terminal)
	terminal, err = s.SyncPod(ctx, podworkers.UpdateUpdate, b, a)
	require.NoError(t, err)
	require.True(t, terminal)
	evict := func(st *v1.PodStatus) { st.Reason = "Evicted" }
	require.NoError(t, s.SyncTerminatingPod(ctx, a, 7, evict))
	require.NoError(t, s.SyncTerminatingRuntimePod(ctx, &podworkers.RuntimePod{UID: "c"}))
	require.NoError(t, s.SyncTerminatedPod(ctx, a))

	calls := s.Calls()
	require.Equal(t, []string{
		"SyncPod create a",
		"SyncPod update b",
		"SyncTerminatingPod a grace=7",
		"SyncTerminatingRuntimePod c",
		"SyncTerminatedPod a",
	}, podworkerstest.Transcript(calls))
	require.Same(t, a, calls[1].MirrorPod)
	require.Equal(t, types.UID("c"), calls[3].RuntimePod.UID)
	var status v1.PodStatus
	calls[2].StatusFunc(&status)
	require.Equal(t, "Evicted", status.Reason)
	require.Equal(t, 2, s.Count(podworkerstest.MethodSyncPod))
	require.Equal(t, 1, s.Count(podworkerstest.MethodSyncTerminatedPod))
	require.Zero(t, s.Count("NoSuchMethod"))

	// Reset forgets the calls, not the script.
	s.Reset()
	require.Empty(t, s.Calls())
	_, err = s.SyncPod(ctx, podworkers.UpdateSync, a, nil)
	require.ErrorIs(t, err, errBoom)
	s.SetError(podworkerstest.MethodSyncPod, "a", nil)
	s.SetTerminal("b", false)
	_, err = s.SyncPod(ctx, podworkers.UpdateSync, a, nil)
	require.NoError(t, err)
	terminal, _ = s.SyncPod(ctx, podworkers.UpdateSync, b, nil)
	require.False(t, terminal)
	require.Equal(t, 3, s.Count(podworkerstest.MethodSyncPod))
}

func TestSyncerBlock(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	s := &podworkerstest.Syncer{}
	a := newPod("a")
	release := s.Block(podworkerstest.MethodSyncTerminatingPod, "a")
	held := goCall(func() error { return s.SyncTerminatingPod(ctx, a, 30, nil) })
	require.NoError(t, s.WaitInFlight(ctx, 1))
	require.Equal(t, 1, s.InFlight())
	require.Equal(t, []string{"SyncTerminatingPod a grace=30"}, podworkerstest.Transcript(s.Calls()))

	// Other methods and other pods are not held.
	require.NoError(t, s.SyncTerminatedPod(ctx, a))
	require.NoError(t, s.SyncTerminatingPod(ctx, newPod("b"), 30, nil))

	// The result is read when the call proceeds.
	s.SetError(podworkerstest.MethodSyncTerminatingPod, "a", errBoom)
	release()
	require.ErrorIs(t, <-held, errBoom)
	require.Zero(t, s.InFlight())
	release() // twice is harmless
	require.ErrorIs(t, s.SyncTerminatingPod(ctx, a, 30, nil), errBoom, "released: no longer held")
}

func TestSyncerBlockedCallReturnsWhenCtxEnds(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	s := &podworkerstest.Syncer{}
	release := s.Block(podworkerstest.MethodSyncPod, "a")
	defer release()
	again := s.Block(podworkerstest.MethodSyncPod, "a")
	callCtx, cancel := context.WithCancel(ctx)
	held := goCall(func() error {
		_, err := s.SyncPod(callCtx, podworkers.UpdateCreate, newPod("a"), nil)
		return err
	})
	require.NoError(t, s.WaitInFlight(ctx, 1))
	cancel()
	err := <-held
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "blocked SyncPod of pod a")
	require.Zero(t, s.InFlight())

	// Block on a blocked method and pod hands out the same block.
	again()
	_, err = s.SyncPod(ctx, podworkers.UpdateSync, newPod("a"), nil)
	require.NoError(t, err)
}

func TestSyncerWaitsEndWithCtx(t *testing.T) {
	s := &podworkerstest.Syncer{}
	require.NoError(t, s.SyncTerminatedPod(testCtx(t), newPod("a")))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls, err := s.WaitCalls(ctx, 2)
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, calls, 1, "the calls so far")
	require.ErrorIs(t, s.WaitInFlight(ctx, 1), context.Canceled)
	calls, err = s.WaitCalls(ctx, 1)
	require.NoError(t, err, "already there: ctx is not consulted")
	require.Len(t, calls, 1)
}

func TestSyncerConcurrentUse(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	s := &podworkerstest.Syncer{}
	const workers, perWorker = 8, 200
	waited := goCall(func() error {
		_, err := s.WaitCalls(ctx, workers*perWorker)
		return err
	})
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			pod := newPod(fmt.Sprint(i))
			for j := range perWorker {
				switch j % 4 {
				case 0:
					_, _ = s.SyncPod(ctx, podworkers.UpdateSync, pod, nil)
					s.SetTerminal(pod.UID, j%8 == 0)
				case 1:
					_ = s.SyncTerminatingPod(ctx, pod, 1, nil)
					s.SetError(podworkerstest.MethodSyncTerminatingPod, pod.UID, errBoom)
				case 2:
					_ = s.SyncTerminatingRuntimePod(ctx, &podworkers.RuntimePod{UID: pod.UID})
					_ = s.Count(podworkerstest.MethodSyncPod)
				case 3:
					_ = s.SyncTerminatedPod(ctx, pod)
					_, _ = s.InFlight(), s.Calls()
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, <-waited)
	require.Len(t, s.Calls(), workers*perWorker)
	require.Equal(t, workers*perWorker/4, s.Count(podworkerstest.MethodSyncTerminatedPod))
}

func TestBarrier(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	b := &podworkerstest.Barrier{}
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, b.Wait(ctx, "a", time.Time{}), "returns at once by default")

	b.Hold("a")
	b.Hold("a") // holding twice is one hold
	held := goCall(func() error { return b.Wait(ctx, "a", t1) })
	require.NoError(t, b.WaitHeld(ctx, 1))
	require.Equal(t, 1, b.Held())
	require.NoError(t, b.Wait(ctx, "b", t1), "other pods pass")
	b.SetError("a", errBoom)
	b.Release("a")
	require.ErrorIs(t, <-held, errBoom)
	require.Zero(t, b.Held())
	b.Release("a") // not held: nothing happens
	b.SetError("a", nil)
	require.NoError(t, b.Wait(ctx, "a", t1))

	b.Hold("c")
	callCtx, cancel := context.WithCancel(ctx)
	held = goCall(func() error { return b.Wait(callCtx, "c", t1) })
	require.NoError(t, b.WaitHeld(ctx, 1))
	cancel()
	require.ErrorIs(t, <-held, context.Canceled)
	b.Release("c")

	require.Equal(t, []podworkerstest.BarrierCall{
		{UID: "a"}, {UID: "a", After: t1}, {UID: "b", After: t1}, {UID: "a", After: t1}, {UID: "c", After: t1},
	}, b.Calls())

	cancelled, stop := context.WithCancel(context.Background())
	stop()
	require.ErrorIs(t, b.WaitHeld(cancelled, 1), context.Canceled)
}
