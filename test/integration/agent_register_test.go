package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/examples/kubelet/agent"
)

// The node registers as configured: labels, taints, provider ID, hostname
// override, max pods, and allocatable = capacity − system − kube reserved −
// the hard eviction threshold, as the kubelet's node allocatable.
func TestReferenceAgentRegistersAsConfigured(t *testing.T) {
	const node = "register-configured"
	admin := srv.AdminClient()
	r := startAgent(t, node, crisim.New(crisim.Config{}), t.TempDir(), nil, func(o *agent.Options) {
		o.NodeLabels = map[string]string{"node.kubernetes.io/role": "edge", "example.com/site": "berlin"}
		o.RegisterWithTaints = []v1.Taint{{Key: "edge", Value: "true", Effect: v1.TaintEffectNoSchedule}}
		o.ProviderID = "edge://register-configured"
		o.Hostname = "edge-host"
		o.MaxPods = 42
		o.SystemReserved = v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("512Mi")}
		o.KubeReserved = v1.ResourceList{v1.ResourceMemory: resource.MustParse("256Mi")}
		o.EvictionHard = "memory.available<256Mi"
		o.MemoryCapacity = 4 << 30
	})
	defer func() { require.NoError(t, r.stop(t)) }()
	var n *v1.Node
	require.Eventually(t, func() bool {
		got, err := admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil || got.Status.Allocatable == nil {
			return false
		}
		n = got
		return true
	}, 30*time.Second, 50*time.Millisecond)
	assert.Equal(t, "edge", n.Labels["node.kubernetes.io/role"])
	assert.Equal(t, "berlin", n.Labels["example.com/site"])
	assert.Equal(t, "edge-host", n.Labels[v1.LabelHostname])
	assert.Contains(t, n.Spec.Taints, v1.Taint{Key: "edge", Value: "true", Effect: v1.TaintEffectNoSchedule},
		"beside the not-ready taint every node registers with")
	assert.Equal(t, "edge://register-configured", n.Spec.ProviderID)
	assert.Equal(t, "42", n.Status.Capacity.Pods().String())
	memCap, memAlloc := n.Status.Capacity[v1.ResourceMemory], n.Status.Allocatable[v1.ResourceMemory]
	assert.Equal(t, int64(4<<30), memCap.Value())
	assert.Equal(t, int64(4<<30-(512+256+256)<<20), memAlloc.Value(), "capacity − system − kube − eviction")
	cpuCap, cpuAlloc := n.Status.Capacity[v1.ResourceCPU], n.Status.Allocatable[v1.ResourceCPU]
	assert.Equal(t, cpuCap.MilliValue()-500, cpuAlloc.MilliValue())
}
