package podworkerstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/podworkers"
	"github.com/nodekit/nodekit/podworkers/podworkerstest"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newWorkers returns Workers over the fakes on a fake clock, without
// jitter so due times are exact.
func newWorkers(t *testing.T, s *podworkerstest.Syncer, b *podworkerstest.Barrier) (*podworkers.Workers, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	w, err := podworkers.New(podworkers.Config{
		Syncer:        s,
		StatusBarrier: b.Wait,
		Clock:         clk,
		ResyncJitter:  -1,
		BackOffJitter: -1,
	})
	require.NoError(t, err)
	return w, clk
}

func send(t *testing.T, w *podworkers.Workers, u podworkers.Update) {
	t.Helper()
	require.NoError(t, w.UpdatePod(context.Background(), u))
}

func requireState(t *testing.T, w *podworkers.Workers, uid types.UID, want podworkers.State) {
	t.Helper()
	got, ok := w.PodState(uid)
	require.True(t, ok, "pod %s is known", uid)
	require.Equal(t, want, got)
}

// processInBackground runs ProcessPending in a goroutine, for tests that
// hold a call in flight; the channel gets its result.
func processInBackground(ctx context.Context, w *podworkers.Workers) <-chan int {
	done := make(chan int, 1)
	go func() { done <- w.ProcessPending(ctx) }()
	return done
}

func TestWorkersLifecycle(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	s, b := &podworkerstest.Syncer{}, &podworkerstest.Barrier{}
	w, clk := newWorkers(t, s, b)
	pod := newPod("a")

	// create → syncing
	send(t, w, podworkers.Update{Type: podworkers.UpdateCreate, Pod: pod})
	require.Equal(t, 1, w.ProcessPending(ctx))
	requireState(t, w, "a", podworkers.StateSyncing)
	require.Equal(t, []string{"SyncPod create a"}, podworkerstest.Transcript(s.Calls()))
	firstSyncEnd := clk.Now()

	// The resync is due after ResyncInterval; the host sends an UpdateSync.
	require.Empty(t, w.DuePods())
	clk.Step(podworkers.DefaultResyncInterval)
	require.Equal(t, []types.UID{"a"}, w.DuePods())
	send(t, w, podworkers.Update{Type: podworkers.UpdateSync, Pod: pod})
	require.Equal(t, 1, w.ProcessPending(ctx))
	requireState(t, w, "a", podworkers.StateSyncing)

	// kill → terminating → terminated, each held in flight to look at it.
	releaseTerminating := s.Block(podworkerstest.MethodSyncTerminatingPod, "a")
	releaseTerminated := s.Block(podworkerstest.MethodSyncTerminatedPod, "a")
	completed := make(chan struct{})
	send(t, w, podworkers.Update{Type: podworkers.UpdateKill, Pod: pod, Kill: &podworkers.KillOptions{
		GracePeriodOverride: ptr.To[int64](5),
		Completed:           completed,
	}})
	done := processInBackground(ctx, w)

	_, err := s.WaitCalls(ctx, 3)
	require.NoError(t, err)
	requireState(t, w, "a", podworkers.StateTerminating)
	require.True(t, w.IsPodTerminationRequested("a"))
	require.True(t, w.CouldHaveRunningContainers("a"))
	require.False(t, w.IsPodKnownTerminated("a"))

	releaseTerminating()
	_, err = s.WaitCalls(ctx, 4)
	require.NoError(t, err)
	requireState(t, w, "a", podworkers.StateTerminated)
	require.False(t, w.CouldHaveRunningContainers("a"))
	require.True(t, w.ShouldPodRuntimeBeRemoved("a"))
	require.False(t, w.ShouldPodBeFinished("a"))
	<-completed // closed once the containers are known to be stopped

	// terminated → finished
	releaseTerminated()
	require.Equal(t, 2, <-done)
	requireState(t, w, "a", podworkers.StateFinished)
	require.True(t, w.ShouldPodBeFinished("a"))

	require.Equal(t, []string{
		"SyncPod create a",
		"SyncPod sync a",
		"SyncTerminatingPod a grace=5",
		"SyncTerminatedPod a",
	}, podworkerstest.Transcript(s.Calls()))
	// The barrier asked for status newer than the previous sync each time.
	calls := b.Calls()
	require.Len(t, calls, 4)
	require.True(t, calls[0].After.IsZero(), "no previous sync")
	require.Equal(t, firstSyncEnd, calls[1].After)
	require.Equal(t, clk.Now(), calls[3].After)

	// Housekeeping forgets the finished pod once it is not desired.
	require.Empty(t, w.SyncKnownPods(ctx, nil))
	_, known := w.PodState("a")
	require.False(t, known)
}

func TestBlockedTerminationKeepsContainersRunning(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	s := &podworkerstest.Syncer{}
	w, _ := newWorkers(t, s, &podworkerstest.Barrier{})
	pod := newPod("a")
	send(t, w, podworkers.Update{Type: podworkers.UpdateCreate, Pod: pod})
	require.Equal(t, 1, w.ProcessPending(ctx))

	release := s.Block(podworkerstest.MethodSyncTerminatingPod, "a")
	send(t, w, podworkers.Update{Type: podworkers.UpdateKill, Pod: pod})
	runCtx, stop := context.WithCancel(ctx)
	done := processInBackground(runCtx, w)
	require.NoError(t, s.WaitInFlight(ctx, 1))
	require.Equal(t, 1, s.InFlight())
	requireState(t, w, "a", podworkers.StateTerminating)
	require.True(t, w.CouldHaveRunningContainers("a"))
	require.True(t, w.ShouldPodContainersBeTerminating("a"))
	require.False(t, w.IsPodKnownTerminated("a"))
	require.False(t, w.ShouldPodRuntimeBeRemoved("a"))

	// A shorter grace period cancels the held call; the workers call again
	// with it, and that call is held too.
	send(t, w, podworkers.Update{Type: podworkers.UpdateKill, Pod: pod, Kill: &podworkers.KillOptions{GracePeriodOverride: ptr.To[int64](3)}})
	_, err := s.WaitCalls(ctx, 3)
	require.NoError(t, err)
	require.NoError(t, s.WaitInFlight(ctx, 1))
	require.True(t, w.CouldHaveRunningContainers("a"))

	// Stopping the caller ends the held call; the work is kept.
	stop()
	<-done
	require.Zero(t, s.InFlight())
	requireState(t, w, "a", podworkers.StateTerminating)
	require.True(t, w.CouldHaveRunningContainers("a"))

	release()
	require.Equal(t, 2, w.ProcessPending(ctx))
	requireState(t, w, "a", podworkers.StateFinished)
	require.False(t, w.CouldHaveRunningContainers("a"))
	require.Equal(t, []string{
		"SyncPod create a",
		"SyncTerminatingPod a grace=30",
		"SyncTerminatingPod a grace=3",
		"SyncTerminatingPod a grace=3",
		"SyncTerminatedPod a",
	}, podworkerstest.Transcript(s.Calls()))
}

func TestSyncErrorIsRetriedAfterBackoff(t *testing.T) {
	ctx := testCtx(t)
	s := &podworkerstest.Syncer{}
	w, clk := newWorkers(t, s, &podworkerstest.Barrier{})
	pod := newPod("a")
	s.SetError(podworkerstest.MethodSyncPod, "a", errBoom)
	send(t, w, podworkers.Update{Type: podworkers.UpdateCreate, Pod: pod})
	require.Equal(t, 1, w.ProcessPending(ctx))
	requireState(t, w, "a", podworkers.StateSyncing)

	next, ok := w.NextDue()
	require.True(t, ok)
	require.Equal(t, epoch.Add(podworkers.DefaultBackOffPeriod), next)
	clk.Step(podworkers.DefaultBackOffPeriod - time.Nanosecond)
	require.Empty(t, w.DuePods(), "not yet")
	clk.Step(time.Nanosecond)
	require.Equal(t, []types.UID{"a"}, w.DuePods())

	s.SetError(podworkerstest.MethodSyncPod, "a", nil)
	send(t, w, podworkers.Update{Type: podworkers.UpdateSync, Pod: pod})
	require.Equal(t, 1, w.ProcessPending(ctx))
	require.Equal(t, []string{"SyncPod create a", "SyncPod sync a"}, podworkerstest.Transcript(s.Calls()))
	next, ok = w.NextDue()
	require.True(t, ok)
	require.Equal(t, clk.Now().Add(podworkers.DefaultResyncInterval), next, "back on the resync interval")
}

func TestFailedTerminatedPodIsRetriedWithResync(t *testing.T) {
	ctx := testCtx(t)
	s := &podworkerstest.Syncer{}
	w, clk := newWorkers(t, s, &podworkerstest.Barrier{})
	pod := newPod("a")
	s.SetError(podworkerstest.MethodSyncTerminatedPod, "a", errBoom)
	send(t, w, podworkers.Update{Type: podworkers.UpdateKill, Pod: pod})
	require.Equal(t, 2, w.ProcessPending(ctx))
	requireState(t, w, "a", podworkers.StateTerminated)

	s.SetError(podworkerstest.MethodSyncTerminatedPod, "a", nil)
	clk.Step(podworkers.DefaultBackOffPeriod)
	require.Equal(t, []types.UID{"a"}, w.DuePods())
	require.NoError(t, w.Resync("a"), "the host no longer has the pod: resync the last known one")
	require.Equal(t, 1, w.ProcessPending(ctx))
	requireState(t, w, "a", podworkers.StateFinished)
	require.Equal(t, []string{
		"SyncTerminatingPod a grace=30",
		"SyncTerminatedPod a",
		"SyncTerminatedPod a",
	}, podworkerstest.Transcript(s.Calls()))
}

func TestTerminalSyncPodAndRuntimePods(t *testing.T) {
	ctx := testCtx(t)
	s, b := &podworkerstest.Syncer{}, &podworkerstest.Barrier{}
	w, _ := newWorkers(t, s, b)
	s.SetTerminal("job", true)
	send(t, w, podworkers.Update{Type: podworkers.UpdateCreate, Pod: newPod("job")})
	send(t, w, podworkers.Update{Type: podworkers.UpdateKill, RunningPod: &podworkers.RuntimePod{UID: "orphan"}})
	require.Equal(t, 4, w.ProcessPending(ctx))
	requireState(t, w, "job", podworkers.StateFinished)
	require.ElementsMatch(t, []string{
		"SyncPod create job",
		"SyncTerminatingPod job grace=30",
		"SyncTerminatedPod job",
		"SyncTerminatingRuntimePod orphan",
	}, podworkerstest.Transcript(s.Calls()))
	for _, c := range b.Calls() {
		require.Equal(t, types.UID("job"), c.UID, "no barrier for a pod without config")
	}
}

func TestBarrierHoldsSync(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	s, b := &podworkerstest.Syncer{}, &podworkerstest.Barrier{}
	w, clk := newWorkers(t, s, b)
	b.Hold("a")
	send(t, w, podworkers.Update{Type: podworkers.UpdateCreate, Pod: newPod("a")})
	done := processInBackground(ctx, w)
	require.NoError(t, b.WaitHeld(ctx, 1))
	require.Empty(t, s.Calls(), "no sync before fresh status")
	b.Release("a")
	require.Equal(t, 1, <-done)
	require.Equal(t, 1, s.Count(podworkerstest.MethodSyncPod))

	// A failing barrier fails the sync without calling the Syncer.
	b.SetError("a", errBoom)
	clk.Step(podworkers.DefaultResyncInterval)
	require.NoError(t, w.Resync("a"))
	require.Equal(t, 1, w.ProcessPending(ctx))
	require.Equal(t, 1, s.Count(podworkerstest.MethodSyncPod))
	next, _ := w.NextDue()
	require.Equal(t, clk.Now().Add(podworkers.DefaultBackOffPeriod), next)
}

func TestRunWithFakes(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	s := &podworkerstest.Syncer{}
	w, _ := newWorkers(t, s, &podworkerstest.Barrier{})
	runCtx, stop := context.WithCancel(ctx)
	ran := goCall(func() error { return w.Run(runCtx) })

	pod := newPod("a")
	send(t, w, podworkers.Update{Type: podworkers.UpdateCreate, Pod: pod})
	_, err := s.WaitCalls(ctx, 1)
	require.NoError(t, err)
	completed := make(chan struct{})
	send(t, w, podworkers.Update{Type: podworkers.UpdateKill, Pod: pod, Kill: &podworkers.KillOptions{Completed: completed}})
	<-completed
	calls, err := s.WaitCalls(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, []string{"SyncPod create a", "SyncTerminatingPod a grace=30", "SyncTerminatedPod a"}, podworkerstest.Transcript(calls))

	// A held call is cancelled when Run stops, and Run returns.
	release := s.Block(podworkerstest.MethodSyncPod, "b")
	defer release()
	send(t, w, podworkers.Update{Type: podworkers.UpdateCreate, Pod: newPod("b")})
	require.NoError(t, s.WaitInFlight(ctx, 1))
	stop()
	require.NoError(t, <-ran)
	require.Zero(t, s.InFlight())
	requireState(t, w, "b", podworkers.StateSyncing)
	require.True(t, w.CouldHaveRunningContainers("b"))
}
