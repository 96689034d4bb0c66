package integration

import (
	"context"
	"errors"
	"github.com/nodekit/nodekit/kubeclient"
	"sync/atomic"
	"testing"
	"time"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/nodestatus"
)

// statusAgent is a nodestatus controller with switchable memory pressure
// and runtime health, on a fake clock.
type statusAgent struct {
	ctl      *nodestatus.Controller
	clk      *clocktesting.FakeClock
	pressure atomic.Bool
	down     atomic.Bool
}

func newStatusAgent(t testing.TB, nodes kubeclient.NodesGetter, name string) *statusAgent {
	a := &statusAgent{clk: clocktesting.NewFakeClock(time.Now())}
	var b nodestatus.Builder
	b.Add(nodestatus.MachineInfo(nodestatus.MachineConfig{
		Machine: func() (*cadvisorapi.MachineInfo, error) {
			return &cadvisorapi.MachineInfo{NumCores: 2, MemoryCapacity: 4 << 30, BootID: "boot"}, nil
		},
		Capacity: func() v1.ResourceList {
			return v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("20Gi")}
		},
	}))
	b.Add(nodestatus.GoRuntime(), nil)
	b.Add(nodestatus.MemoryPressureCondition(a.pressure.Load, nil))
	b.Add(nodestatus.ReadyCondition(nodestatus.ReadyConfig{RuntimeErrors: func() error {
		if a.down.Load() {
			return errors.New("container runtime is down")
		}
		return nil
	}}))
	setters, err := b.Setters()
	require.NoError(t, err)
	a.ctl, err = nodestatus.New(nodestatus.Config{Client: nodes, NodeName: name, Setters: setters, Clock: a.clk,
		Rand:   func() float64 { return 0.5 }, // no report jitter: the quiet period is exactly 5m
		Taints: []v1.Taint{{Key: "example.com/edge", Effect: v1.TaintEffectNoSchedule}}})
	require.NoError(t, err)
	return a
}

func TestNodeStatusAsNodeIdentity(t *testing.T) {
	ctx := context.Background()
	const name = "status-node-1"
	cs, m := meteredNodeClient(t, name)
	admin := srv.AdminClient()
	a := newStatusAgent(t, clientset.Wrap(cs), name)

	res, err := a.ctl.Sync(ctx)
	require.NoError(t, err)
	require.True(t, res.Registered)
	require.True(t, res.Ready)
	require.Equal(t, int64(1), m.requests.Load(), "registration is one CREATE carrying the status")
	n, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, name, n.Labels[v1.LabelHostname])
	require.Equal(t, "example.com/edge", n.Spec.Taints[0].Key)
	require.Equal(t, v1.NodeReady, n.Status.Conditions[len(n.Status.Conditions)-1].Type)

	w, err := admin.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: n.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()

	// Four minutes of nothing changing: not one request.
	for range 24 {
		a.clk.Step(10 * time.Second)
		res, err := a.ctl.Sync(ctx)
		require.NoError(t, err)
		require.False(t, res.Patched)
	}
	require.Equal(t, int64(1), m.requests.Load())

	// Memory pressure: one PATCH, seen by a watcher.
	a.pressure.Store(true)
	a.clk.Step(10 * time.Second)
	res, err = a.ctl.Sync(ctx)
	require.NoError(t, err)
	require.True(t, res.Patched)
	require.Equal(t, int64(2), m.requests.Load())
	select {
	case ev := <-w.ResultChan():
		require.Equal(t, watch.Modified, ev.Type)
		node := ev.Object.(*v1.Node)
		for _, c := range node.Status.Conditions {
			if c.Type == v1.NodeMemoryPressure {
				require.Equal(t, v1.ConditionTrue, c.Status)
				require.Equal(t, "KubeletHasInsufficientMemory", c.Reason)
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event for the status patch")
	}

	// Deleted by an admin: the next pass finds it gone, the one after
	// registers it again.
	require.NoError(t, admin.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}))
	a.down.Store(true)
	a.clk.Step(10 * time.Second)
	_, err = a.ctl.Sync(ctx)
	require.Error(t, err)
	require.True(t, apierrors.IsNotFound(errors.Unwrap(err)), "%v", err)
	res, err = a.ctl.Sync(ctx)
	require.NoError(t, err)
	require.True(t, res.Registered)
	require.False(t, res.Ready)
	n, err = admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, v1.ConditionFalse, n.Status.Conditions[len(n.Status.Conditions)-1].Status)
}

func TestNodeStatusReconcilesExistingNode(t *testing.T) {
	ctx := context.Background()
	const name = "status-node-2"
	admin := srv.AdminClient()
	pre := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: "stale", "team": "a"}}}
	pre, err := admin.CoreV1().Nodes().Create(ctx, pre, metav1.CreateOptions{})
	require.NoError(t, err)
	pre.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionFalse, Reason: "RouteCreated", Message: "routes are set"}}
	_, err = admin.CoreV1().Nodes().UpdateStatus(ctx, pre, metav1.UpdateOptions{})
	require.NoError(t, err)

	a := newStatusAgent(t, clientset.Wrap(srv.NodeClient(name)), name)
	res, err := a.ctl.Sync(ctx)
	require.NoError(t, err)
	require.True(t, res.Registered)
	n, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, name, n.Labels[v1.LabelHostname], "kubelet-owned label reconciled")
	require.Equal(t, "a", n.Labels["team"], "other labels kept")
	require.Equal(t, "true", n.Annotations[nodestatus.AnnotationAttachDetach])
	types := map[v1.NodeConditionType]v1.ConditionStatus{}
	for _, c := range n.Status.Conditions {
		types[c.Type] = c.Status
	}
	require.Equal(t, v1.ConditionFalse, types[v1.NodeNetworkUnavailable], "an external writer's condition is preserved")
	require.Equal(t, v1.ConditionTrue, types[v1.NodeReady])
	require.Equal(t, v1.NodeReady, n.Status.Conditions[len(n.Status.Conditions)-1].Type)
	require.Equal(t, int64(2000), n.Status.Capacity.Cpu().MilliValue())

	// Another node's identity cannot patch this one.
	other := newStatusAgent(t, clientset.Wrap(srv.NodeClient("status-intruder")), name)
	_, err = other.ctl.Sync(ctx)
	require.True(t, apierrors.IsForbidden(errors.Unwrap(err)) || apierrors.IsForbidden(err), "%v", err)
}
