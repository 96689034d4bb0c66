package nodestatus

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func statusNode() *v1.Node {
	t0 := metav1.NewTime(time.Unix(1000, 0).UTC())
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "b"}}}
	n.Spec.PodCIDR = "10.0.0.0/24"
	n.Status.Conditions = []v1.NodeCondition{
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: t0, LastTransitionTime: t0},
		{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: t0, LastTransitionTime: t0},
	}
	n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}, {Type: v1.NodeHostName, Address: "n1"}}
	n.Status.Capacity = v1.ResourceList{v1.ResourceCPU: q("2")}
	return n
}

func TestStatusChanged(t *testing.T) {
	later := metav1.NewTime(time.Unix(2000, 0))
	for name, tc := range map[string]struct {
		mutate func(*v1.Node)
		want   bool
	}{
		"identical": {func(*v1.Node) {}, false},
		"heartbeats only": {func(n *v1.Node) {
			n.Status.Conditions[0].LastHeartbeatTime = later
			n.Status.Conditions[1].LastHeartbeatTime = later
		}, false},
		"reordered":       {func(n *v1.Node) { c := n.Status.Conditions; c[0], c[1] = c[1], c[0] }, false},
		"spec only":       {func(n *v1.Node) { n.Spec.Unschedulable = true }, false},
		"status flip":     {func(n *v1.Node) { n.Status.Conditions[1].Status = v1.ConditionFalse }, true},
		"transition":      {func(n *v1.Node) { n.Status.Conditions[1].LastTransitionTime = later }, true},
		"message":         {func(n *v1.Node) { n.Status.Conditions[1].Message = "runtime down" }, true},
		"reason":          {func(n *v1.Node) { n.Status.Conditions[0].Reason = "KubeletHasInsufficientMemory" }, true},
		"other condition": {func(n *v1.Node) { n.Status.Conditions[0].Type = v1.NodeDiskPressure }, true},
		"added condition": {func(n *v1.Node) { n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: "X"}) }, true},
		"capacity":        {func(n *v1.Node) { n.Status.Capacity[v1.ResourceCPU] = q("3") }, true},
		"same quantity":   {func(n *v1.Node) { n.Status.Capacity[v1.ResourceCPU] = q("2000m") }, false},
		"address":         {func(n *v1.Node) { n.Status.Addresses[0].Address = "10.0.0.2" }, true},
		"images":          {func(n *v1.Node) { n.Status.Images = []v1.ContainerImage{{Names: []string{"x"}}} }, true},
	} {
		t.Run(name, func(t *testing.T) {
			old := statusNode()
			n := old.DeepCopy()
			tc.mutate(n)
			require.Equal(t, tc.want, StatusChanged(&old.Status, &n.Status))
		})
	}
	require.False(t, StatusChanged(nil, nil))
	require.True(t, StatusChanged(nil, &v1.NodeStatus{}))
}

func TestStatusPatchGolden(t *testing.T) {
	later := metav1.NewTime(time.Unix(2000, 0).UTC())
	for name, tc := range map[string]struct {
		mutate func(*v1.Node)
		golden string
	}{
		"heartbeat": {func(n *v1.Node) { n.Status.Conditions[1].LastHeartbeatTime = later },
			`{"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"Ready"}],"conditions":[{"lastHeartbeatTime":"1970-01-01T00:33:20Z","type":"Ready"}]}}`},
		"flip": {func(n *v1.Node) {
			n.Status.Conditions[1] = v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady", Message: "runtime down", LastHeartbeatTime: later, LastTransitionTime: later}
		}, `{"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"Ready"}],"conditions":[{"lastHeartbeatTime":"1970-01-01T00:33:20Z","lastTransitionTime":"1970-01-01T00:33:20Z","message":"runtime down","reason":"KubeletNotReady","status":"False","type":"Ready"}]}}`},
		"spec ignored": {func(n *v1.Node) { n.Spec.Unschedulable = true; n.Spec.PodCIDR = "" }, `{}`},
		"label":        {func(n *v1.Node) { n.Labels["kubernetes.io/os"] = "linux" }, `{"metadata":{"labels":{"kubernetes.io/os":"linux"}}}`},
		"addresses replaced": {func(n *v1.Node) {
			n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}, {Type: v1.NodeInternalIP, Address: "fd00::1"}, {Type: v1.NodeHostName, Address: "n1"}}
		}, `{"status":{"addresses":[{"$patch":"replace"},{"address":"10.0.0.1","type":"InternalIP"},{"address":"fd00::1","type":"InternalIP"},{"address":"n1","type":"Hostname"}]}}`},
	} {
		t.Run(name, func(t *testing.T) {
			old := statusNode()
			n := old.DeepCopy()
			tc.mutate(n)
			patch, err := StatusPatch(old, n)
			require.NoError(t, err)
			require.JSONEq(t, tc.golden, string(patch))
			require.Equal(t, "10.0.0.0/24", old.Spec.PodCIDR, "inputs are not modified")
		})
	}
}

// TestHeartbeatPatch: where only heartbeat times moved, the patch built
// directly is the diff's, byte for byte; anything else goes to the diff.
func TestHeartbeatPatch(t *testing.T) {
	later := metav1.NewTime(time.Unix(2000, 0))
	for name, tc := range map[string]struct {
		mutate func(*v1.Node)
		direct bool
	}{
		"nothing": {func(*v1.Node) {}, true},
		"one":     {func(n *v1.Node) { n.Status.Conditions[1].LastHeartbeatTime = later }, true},
		"all": {func(n *v1.Node) {
			n.Status.Conditions[0].LastHeartbeatTime, n.Status.Conditions[1].LastHeartbeatTime = later, later
		}, true},
		"reordered": {func(n *v1.Node) { c := n.Status.Conditions; c[0], c[1] = c[1], c[0]; c[0].LastHeartbeatTime = later }, true},
		"status":    {func(n *v1.Node) { n.Status.Conditions[1].Status = v1.ConditionFalse }, false},
		"capacity":  {func(n *v1.Node) { n.Status.Capacity[v1.ResourceCPU] = q("3") }, false},
		"label":     {func(n *v1.Node) { n.Labels["x"] = "y"; n.Status.Conditions[1].LastHeartbeatTime = later }, false},
		"annotation": {func(n *v1.Node) {
			n.Annotations = map[string]string{"x": "y"}
			n.Status.Conditions[1].LastHeartbeatTime = later
		}, false},
		"unset heartbeat": {func(n *v1.Node) { n.Status.Conditions[1].LastHeartbeatTime = metav1.Time{} }, false},
	} {
		t.Run(name, func(t *testing.T) {
			old := statusNode()
			n := old.DeepCopy()
			tc.mutate(n)
			direct, ok := heartbeatPatch(old, n)
			require.Equal(t, tc.direct, ok)
			diff, err := diffStatusPatch(old, n)
			require.NoError(t, err)
			if ok {
				require.Equal(t, string(diff), string(direct))
			}
			patch, err := StatusPatch(old, n)
			require.NoError(t, err)
			require.Equal(t, string(diff), string(patch))
		})
	}
}
