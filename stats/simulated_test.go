package stats

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func TestSimulatedMemory(t *testing.T) {
	ws := func(n uint64) *statsapi.MemoryStats { return &statsapi.MemoryStats{WorkingSetBytes: &n} }
	inner := SummaryProviderFunc(func(context.Context) (*statsapi.Summary, error) {
		return &statsapi.Summary{Pods: []statsapi.PodStats{{Memory: ws(300)}, {Memory: ws(500)}, {}}}, nil
	})
	sum, err := SimulatedMemory(inner, 1000).Get(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 200, *sum.Node.Memory.AvailableBytes)
	require.EqualValues(t, 800, *sum.Node.Memory.WorkingSetBytes)
	sum, err = SimulatedMemory(inner, 600).Get(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 0, *sum.Node.Memory.AvailableBytes, "over capacity: none available")
}
