package synclooptest_test

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

	"github.com/nodekit/nodekit/syncloop/synclooptest"
)

var errBoom = errors.New("boom")

// testCtx bounds every wait of a test; nothing in these tests sleeps.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testPod is a minimal valid pod bound to node-a.
func testPod(name string, uid types.UID) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid},
		Spec: v1.PodSpec{
			NodeName:   "node-a",
			Containers: []v1.Container{{Name: "c", Image: "busybox:1.36"}},
		},
	}
}

func TestHandlerRecordsEveryMethod(t *testing.T) {
	ctx := testCtx(t)
	h := &synclooptest.Handler{CleanupErr: errBoom}
	p1, p2 := testPod("p1", "u1"), testPod("p2", "u2")
	h.HandlePodAdditions(ctx, []*v1.Pod{p1, p2})
	h.HandlePodUpdates(ctx, []*v1.Pod{p1})
	h.HandlePodRemoves(ctx, []*v1.Pod{p2})
	h.HandlePodReconcile(ctx, []*v1.Pod{p1})
	syncs := []*v1.Pod{p2, p1}
	h.HandlePodSyncs(ctx, syncs)
	syncs[0] = nil // the loop reuses its slice: the op keeps its own
	require.ErrorIs(t, h.HandlePodCleanups(ctx), errBoom)
	require.Equal(t, 6, h.Len())

	ops := h.Take()
	require.Equal(t, []string{"ADD p1,p2", "UPDATE p1", "REMOVE p2", "RECONCILE p1", "SYNC p2,p1", "CLEANUP"}, synclooptest.Transcript(ops))
	require.Equal(t, synclooptest.Op{
		Kind:  synclooptest.KindSync,
		Names: []string{"p2", "p1"},
		UIDs:  []types.UID{"u2", "u1"},
		Pods:  []*v1.Pod{p2, p1},
	}, ops[4])
	require.Equal(t, synclooptest.Op{Kind: synclooptest.KindCleanup}, ops[5])
	require.Zero(t, h.Len())
	require.Empty(t, h.Take())
}

func TestHandlerWait(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	h := &synclooptest.Handler{}
	const callers, perCaller = 4, 250
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			for j := range perCaller {
				h.HandlePodSyncs(ctx, []*v1.Pod{testPod(fmt.Sprint("p", i), types.UID(fmt.Sprint(j)))})
			}
		})
	}
	ops, err := h.Wait(ctx, callers*perCaller)
	require.NoError(t, err)
	require.Len(t, ops, callers*perCaller, "all calls, taken")
	wg.Wait()
	require.Zero(t, h.Len())

	// A Wait that ends with ctx leaves the ops it saw in place.
	_ = h.HandlePodCleanups(ctx)
	done, cancel := context.WithCancel(ctx)
	cancel()
	ops, err = h.Wait(done, 2)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "waiting for 2 ops, have 1 [CLEANUP]")
	require.Equal(t, []string{"CLEANUP"}, synclooptest.Transcript(ops))
	require.Equal(t, 1, h.Len())
}

// setRecorder is a SetFunc that sends each snapshot's pod names.
func setRecorder() (func(context.Context, []*v1.Pod), <-chan []string) {
	got := make(chan []string, 10)
	return func(_ context.Context, pods []*v1.Pod) {
		names := []string{}
		for _, p := range pods {
			names = append(names, p.Name)
			p.Annotations = map[string]string{"owned": "by the loop"}
		}
		got <- names
	}, got
}

func TestSourceQueuesThenDelivers(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	src := synclooptest.NewSource("api")
	require.Equal(t, "api", src.Name())
	require.False(t, src.Running())
	p1 := testPod("p1", "u1")
	src.Push(p1)
	src.Push()
	set, got := setRecorder()
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- src.Run(runCtx, set) }()

	require.Equal(t, []string{"p1"}, <-got, "queued snapshots, in order")
	require.Equal(t, []string{}, <-got)
	require.True(t, src.Running())
	require.Nil(t, p1.Annotations, "the loop got a copy")
	require.ErrorIs(t, src.Run(ctx, set), synclooptest.ErrSourceRunning)

	src.Push(p1, testPod("p2", "u2"))
	require.Equal(t, []string{"p1", "p2"}, <-got, "delivered at once while running")
	stop()
	require.NoError(t, <-ran)
	require.False(t, src.Running())

	// Queued again for the next Run.
	src.Push(testPod("p3", "u3"))
	require.Empty(t, got)
}

func TestSourceFail(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	set, got := setRecorder()

	src := synclooptest.NewSource("api")
	src.Push(testPod("p1", "u1"))
	src.Fail(errBoom)
	require.ErrorIs(t, src.Run(ctx, set), errBoom, "fails after delivering the queue")
	require.Equal(t, []string{"p1"}, <-got)

	// Fail(nil) withdraws an error; a Fail while running ends Run.
	src.Fail(errBoom)
	src.Fail(nil)
	src.Push()
	ran := make(chan error, 1)
	go func() { ran <- src.Run(ctx, set) }()
	<-got // Run is active
	src.Fail(errBoom)
	require.ErrorIs(t, <-ran, errBoom)
}
