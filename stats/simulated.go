package stats

import (
	"context"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// SimulatedMemory wraps a summary of a node whose pods are simulated (a CRI
// simulator's): the node's memory becomes a machine of capacity bytes
// whose usage is the sum of the pods' working sets, as the simulator
// reports them, so memory pressure and eviction can be simulated.
func SimulatedMemory(inner SummaryProvider, capacity int64) SummaryProvider {
	return SummaryProviderFunc(func(ctx context.Context) (*statsapi.Summary, error) {
		sum, err := inner.Get(ctx)
		if err != nil {
			return nil, err
		}
		var used uint64
		for _, p := range sum.Pods {
			if p.Memory != nil && p.Memory.WorkingSetBytes != nil {
				used += *p.Memory.WorkingSetBytes
			}
		}
		total := uint64(max(capacity, 0))
		avail := total - min(used, total)
		if sum.Node.Memory == nil {
			sum.Node.Memory = &statsapi.MemoryStats{}
		}
		sum.Node.Memory.AvailableBytes, sum.Node.Memory.WorkingSetBytes, sum.Node.Memory.UsageBytes = &avail, &used, &used
		return sum, nil
	})
}
