package synclooptest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/syncloop"
	"github.com/nodekit/nodekit/syncloop/synclooptest"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// dueList is a PodsToSync the test sets; safe while Run calls it.
type dueList struct {
	mu   sync.Mutex
	uids []types.UID
}

func (d *dueList) set(uids ...types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.uids = uids
}

func (d *dueList) get() []types.UID {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.uids
}

func TestLoopCoreWithFakeHandler(t *testing.T) {
	ctx := testCtx(t)
	h := &synclooptest.Handler{CleanupErr: errBoom}
	clk := clocktesting.NewFakeClock(t0)
	due := &dueList{}
	l, err := syncloop.New(syncloop.Config{
		Handler:         h,
		ExternalSources: []string{kubetypes.APIServerSource},
		Clock:           clk,
		PodsToSync:      due.get,
	})
	require.NoError(t, err)
	step := func(pods ...*v1.Pod) []string {
		t.Helper()
		l.Set(ctx, kubetypes.APIServerSource, pods)
		l.Iterate(ctx)
		return synclooptest.Transcript(h.Take())
	}

	require.Equal(t, syncloop.DefaultSyncPeriod, l.Iterate(ctx), "the sync tick is next")
	require.Empty(t, h.Take())
	require.Equal(t, []string{"ADD p1,p2"}, step(testPod("p1", "u1"), testPod("p2", "u2")))
	require.Empty(t, step(testPod("p1", "u1"), testPod("p2", "u2")), "same snapshot")

	p1 := testPod("p1", "u1")
	p1.Spec.Containers[0].Image = "busybox:1.37"
	require.Equal(t, []string{"UPDATE p1"}, step(p1, testPod("p2", "u2")))
	p2 := testPod("p2", "u2")
	p2.Status.Phase = v1.PodRunning
	require.Equal(t, []string{"RECONCILE p2"}, step(p1, p2))
	deleting := p1.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	require.Equal(t, []string{"UPDATE p1"}, step(deleting, p2), "DELETE is routed as an update")
	require.Equal(t, []string{"REMOVE p1"}, step(p2))

	// Events sync pods the loop knows; the removed pod is dropped.
	l.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: "u1", Type: pleg.ContainerDied, ContainerID: containerid.ID{ID: "c1"}})
	l.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: "u2", Type: pleg.ContainerStarted, ContainerID: containerid.ID{ID: "c2"}})
	l.Iterate(ctx)
	ops := h.Take()
	require.Equal(t, []string{"SYNC p2"}, synclooptest.Transcript(ops))
	require.Equal(t, []types.UID{"u2"}, ops[0].UIDs)
	require.Equal(t, kubetypes.APIServerSource, ops[0].Pods[0].Annotations[kubetypes.ConfigSourceAnnotationKey])

	// The sync tick asks PodsToSync and resolves the UIDs through the
	// loop's index; housekeeping follows on its own period.
	due.set("u1", "u2", "unknown")
	clk.Step(syncloop.DefaultSyncPeriod)
	require.Equal(t, syncloop.DefaultSyncPeriod, l.Iterate(ctx))
	require.Equal(t, []string{"SYNC p2"}, synclooptest.Transcript(h.Take()))
	clk.Step(syncloop.DefaultSyncPeriod)
	l.Iterate(ctx)
	require.Equal(t, []string{"SYNC p2", "CLEANUP"}, synclooptest.Transcript(h.Take()), "a cleanup error is only logged")
}

func TestHousekeepingWaitsForEverySource(t *testing.T) {
	ctx := testCtx(t)
	h := &synclooptest.Handler{}
	clk := clocktesting.NewFakeClock(t0)
	l, err := syncloop.New(syncloop.Config{Handler: h, ExternalSources: []string{"a", "b"}, Clock: clk})
	require.NoError(t, err)
	l.Set(ctx, "a", nil)
	clk.Step(syncloop.DefaultHousekeepingPeriod)
	l.Iterate(ctx)
	l.Iterate(ctx)
	require.Equal(t, []string{"ADD"}, synclooptest.Transcript(h.Take()), "an empty first snapshot is an empty ADD; b has sent nothing")
	l.Set(ctx, "b", []*v1.Pod{testPod("p1", "u1")})
	clk.Step(syncloop.DefaultHousekeepingPeriod)
	l.Iterate(ctx)
	require.Equal(t, []string{"ADD p1", "CLEANUP"}, synclooptest.Transcript(h.Take()))
}

// parked waits until Run is parked with timed work ahead and returns when
// that work is due. NextWake has no channel to wait on, so this polls
// it, as the syncloop tests do.
func parked(t *testing.T, l *syncloop.Loop, clk *clocktesting.FakeClock) time.Time {
	t.Helper()
	var next time.Time
	require.Eventually(t, func() bool {
		n, ok := l.NextWake()
		next = n
		return ok && n.After(clk.Now())
	}, 5*time.Second, time.Millisecond, "Run parked")
	return next
}

func TestRunWithFakeSource(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	h := &synclooptest.Handler{}
	clk := clocktesting.NewFakeClock(t0)
	src := synclooptest.NewSource(kubetypes.APIServerSource)
	due := &dueList{}
	l, err := syncloop.New(syncloop.Config{Handler: h, Sources: []syncloop.Source{src}, Clock: clk, PodsToSync: due.get})
	require.NoError(t, err)

	src.Push(testPod("p1", "u1")) // before Run: delivered when it starts
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- l.Run(runCtx) }()
	expect := func(want ...string) {
		t.Helper()
		ops, err := h.Wait(ctx, len(want))
		require.NoError(t, err)
		require.Equal(t, want, synclooptest.Transcript(ops))
	}
	expect("ADD p1")

	// Step to the sync tick: PodsToSync's UIDs are resolved to pods.
	next := parked(t, l, clk)
	require.Equal(t, t0.Add(syncloop.DefaultSyncPeriod), next)
	due.set("u1")
	clk.Step(next.Sub(clk.Now()))
	expect("SYNC p1")

	// The next tick is housekeeping's too: the source is ready.
	next = parked(t, l, clk)
	require.Equal(t, t0.Add(syncloop.DefaultHousekeepingPeriod), next)
	clk.Step(next.Sub(clk.Now()))
	expect("SYNC p1", "CLEANUP")
	require.True(t, l.SourcesReady())

	// A snapshot without p1 removes it; the loop then drops its UID.
	parked(t, l, clk)
	src.Push()
	expect("REMOVE p1")
	next = parked(t, l, clk)
	clk.Step(next.Sub(clk.Now()))
	parked(t, l, clk)
	require.Zero(t, h.Len(), "u1 is no longer known")
	require.True(t, clk.Now().Equal(l.LastIteration()))

	stop()
	require.NoError(t, <-ran)
	require.False(t, src.Running())
}

func TestRunStopsOnSourceFailure(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	h := &synclooptest.Handler{}
	src, other := synclooptest.NewSource("a"), synclooptest.NewSource("b")
	l, err := syncloop.New(syncloop.Config{Handler: h, Sources: []syncloop.Source{src, other}, Clock: clocktesting.NewFakeClock(t0)})
	require.NoError(t, err)
	ran := make(chan error, 1)
	go func() { ran <- l.Run(ctx) }()
	src.Push(testPod("p1", "u1"))
	_, err = h.Wait(ctx, 1)
	require.NoError(t, err)

	src.Fail(errBoom)
	err = <-ran
	require.ErrorIs(t, err, errBoom)
	require.ErrorContains(t, err, `source "a"`)
	require.False(t, other.Running(), "every source is stopped")
}
