package nodestatus

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

func TestViewFallsBackUntilReported(t *testing.T) {
	calls := 0
	fail := true
	view := NewView(func() (*v1.Node, error) {
		calls++
		if fail {
			return nil, errors.New("machine info unreadable")
		}
		return &v1.Node{Status: v1.NodeStatus{
			Addresses:   []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.9"}},
			Capacity:    v1.ResourceList{v1.ResourceMemory: q("2Gi")},
			Allocatable: v1.ResourceList{v1.ResourceCPU: q("2")}}}, nil
	})
	require.Nil(t, view.HostIPs(), "fallback failed")
	require.Zero(t, view.MemoryCapacity())
	fail = false
	require.Equal(t, []string{"10.0.0.9"}, view.HostIPs(), "the fallback is retried")
	require.EqualValues(t, 2<<30, view.MemoryCapacity())
	alloc := view.Allocatable()
	require.Equal(t, "2", alloc.Cpu().String())
	require.False(t, view.Reported())
	require.Equal(t, 3, calls, "retried after each failure, kept once built")

	a := newAgent(t, func(c *Config) { c.View = view })
	_, err := a.ctl.Sync(context.Background())
	require.NoError(t, err)
	require.True(t, view.Reported())
	require.EqualValues(t, 4<<30, view.MemoryCapacity(), "the reported Node's")
	n, err := view.Node()
	require.NoError(t, err)
	require.Equal(t, "n1", n.Name)
	require.Nil(t, n.ManagedFields)
}

func TestViewHostIPs(t *testing.T) {
	for _, tc := range []struct {
		addrs []v1.NodeAddress
		want  []string
	}{
		{[]v1.NodeAddress{{Type: v1.NodeHostName, Address: "n1"}, {Type: v1.NodeExternalIP, Address: "1.2.3.4"},
			{Type: v1.NodeInternalIP, Address: "10.0.0.1"}, {Type: v1.NodeInternalIP, Address: "10.0.0.2"}}, []string{"10.0.0.1"}},
		{[]v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "fd00::1"}, {Type: v1.NodeInternalIP, Address: "10.0.0.1"}}, []string{"10.0.0.1", "fd00::1"}},
		{[]v1.NodeAddress{{Type: v1.NodeExternalIP, Address: "1.2.3.4"}}, []string{"1.2.3.4"}},
		{nil, nil},
	} {
		view := NewView(func() (*v1.Node, error) { return &v1.Node{Status: v1.NodeStatus{Addresses: tc.addrs}}, nil })
		require.Equal(t, tc.want, view.HostIPs())
	}
}

func TestSubtractResources(t *testing.T) {
	got := SubtractResources(v1.ResourceList{v1.ResourceCPU: q("2"), v1.ResourceMemory: q("1Gi")},
		v1.ResourceList{v1.ResourceCPU: q("500m"), v1.ResourceMemory: q("2Gi"), v1.ResourcePods: q("1")})
	require.Equal(t, "1500m", got.Cpu().String())
	require.True(t, got.Memory().IsZero(), "never below zero")
	_, ok := got[v1.ResourcePods]
	require.False(t, ok, "only what capacity has")
}
