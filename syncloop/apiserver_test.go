package syncloop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

func apiPod(name, node string) *v1.Pod {
	p := testPod(name, types.UID("uid-"+name))
	p.Spec.NodeName = node
	return p
}

func TestAPIServerSourceWatchesOwnPods(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := context.Background()
	client := fake.NewClientset(apiPod("mine", "node-a"), apiPod("theirs", "node-b"))
	clk := clocktesting.NewFakeClock(t0)
	src, err := NewAPIServerSource(APIServerSourceConfig{Client: client, NodeName: "node-a", Clock: clk})
	require.NoError(t, err)
	rec := &recorder{}
	l, err := New(Config{Handler: rec, Sources: []Source{src}, Clock: clk, SyncPeriod: time.Hour, HousekeepingPeriod: time.Hour})
	require.NoError(t, err)
	stop := startLoop(t, l)
	expect := func(want ...string) {
		t.Helper()
		eventually(t, func() bool { return rec.len() >= len(want) }, fmt.Sprint(want))
		require.Equal(t, want, rec.take())
	}
	expect("ADD mine")
	require.True(t, l.SourcesReady())

	pods := client.CoreV1().Pods("default")
	_, err = pods.Create(ctx, apiPod("second", "node-a"), metav1.CreateOptions{})
	require.NoError(t, err)
	expect("ADD second")

	// Status written back by the agent → RECONCILE.
	p, err := pods.Get(ctx, "second", metav1.GetOptions{})
	require.NoError(t, err)
	p.Status.Phase = v1.PodRunning
	_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	expect("RECONCILE second")

	// Graceful deletion → DELETE (routed as an update), then removal after
	// the grace period → REMOVE.
	p, err = pods.Get(ctx, "mine", metav1.GetOptions{})
	require.NoError(t, err)
	now := metav1.NewTime(t0)
	grace := int64(30)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	_, err = pods.Update(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	expect("UPDATE mine")
	require.NoError(t, pods.Delete(ctx, "mine", metav1.DeleteOptions{}))
	expect("REMOVE mine")

	// Pods of other nodes never arrive, even from a server that ignores the
	// field selector (the fake does).
	_, err = pods.Create(ctx, apiPod("elsewhere", "node-b"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = pods.Create(ctx, apiPod("third", "node-a"), metav1.CreateOptions{})
	require.NoError(t, err)
	expect("ADD third")
	stop(nil)
}

func TestAPIServerSourceValidates(t *testing.T) {
	_, err := NewAPIServerSource(APIServerSourceConfig{NodeName: "n"})
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = NewAPIServerSource(APIServerSourceConfig{Client: fake.NewClientset()})
	require.ErrorIs(t, err, ErrInvalidConfig)
}

// The source's store keeps no managed fields: the agent never reads them.
func TestAPIServerSourceDropsManagedFields(t *testing.T) {
	src := &APIServerSource{cfg: APIServerSourceConfig{NodeName: "node-a"}}
	var got []*v1.Pod
	store := leanStore{cache.NewUndeltaStore(src.pusher(context.Background(), func(_ context.Context, pods []*v1.Pod) { got = pods }), cache.MetaNamespaceKeyFunc)}
	withFields := func(name string) *v1.Pod {
		p := apiPod(name, "node-a")
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
		return p
	}
	require.NoError(t, store.Replace([]any{withFields("a")}, "1"))
	require.NoError(t, store.Add(withFields("b")))
	require.NoError(t, store.Update(withFields("a")))
	require.Len(t, got, 2)
	for _, p := range got {
		require.Nil(t, p.ManagedFields, p.Name)
	}
}
