package eviction

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// HardReservation is what the hard thresholds hold back from a node's
// allocatable, as the kubelet computes it: memory.available as memory and
// nodefs.available as ephemeral-storage, each a quantity or a percentage
// of that capacity. Soft thresholds reserve nothing. Add it to the system
// and kube reservations (nodestatus.MachineConfig.Reserved).
func HardReservation(thresholds []Threshold, capacity v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for _, t := range thresholds {
		if !t.IsHard() {
			continue
		}
		var name v1.ResourceName
		switch t.Signal {
		case SignalMemoryAvailable:
			name = v1.ResourceMemory
		case SignalNodeFsAvailable:
			name = v1.ResourceEphemeralStorage
		default:
			continue
		}
		c := capacity[name]
		out[name] = *resource.NewQuantity(t.Value.amount(c.Value()), resource.BinarySI)
	}
	return out
}
