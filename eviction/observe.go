package eviction

import (
	"time"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Observation is the value of one signal in a stats summary.
type Observation struct {
	// Available is the available amount (bytes, inodes or PIDs).
	Available int64
	// Capacity is the total against which percentages are resolved.
	Capacity int64
	// Time is when the underlying statistic was sampled; zero if unknown.
	Time time.Time
}

// Observations maps each signal present in a summary to its observation.
type Observations map[Signal]Observation

// Observe derives signal observations from a summary, as upstream does:
// memory from the node's memory stats (capacity = available + working
// set), allocatable memory from the "pods" system container, the
// filesystems from Node.Fs and Node.Runtime.ImageFs/ContainerFs, PIDs from
// Node.Rlimit. A signal whose inputs are missing is absent.
func Observe(s *statsapi.Summary) Observations {
	obs := make(Observations, 9)
	if s == nil {
		return obs
	}
	n := &s.Node
	if m := n.Memory; m != nil && m.AvailableBytes != nil && m.WorkingSetBytes != nil {
		obs[SignalMemoryAvailable] = Observation{int64(*m.AvailableBytes), int64(*m.AvailableBytes + *m.WorkingSetBytes), m.Time.Time}
	}
	for i := range n.SystemContainers {
		c := &n.SystemContainers[i]
		if c.Name != statsapi.SystemContainerPods {
			continue
		}
		if m := c.Memory; m != nil && m.AvailableBytes != nil && m.WorkingSetBytes != nil {
			obs[SignalAllocatableMemoryAvailable] = Observation{int64(*m.AvailableBytes), int64(*m.AvailableBytes + *m.WorkingSetBytes), m.Time.Time}
		}
		break
	}
	observeFs(obs, n.Fs, SignalNodeFsAvailable, SignalNodeFsInodesFree)
	if n.Runtime != nil {
		observeFs(obs, n.Runtime.ImageFs, SignalImageFsAvailable, SignalImageFsInodesFree)
		observeFs(obs, n.Runtime.ContainerFs, SignalContainerFsAvailable, SignalContainerFsInodesFree)
	}
	if r := n.Rlimit; r != nil && r.MaxPID != nil && r.NumOfRunningProcesses != nil {
		obs[SignalPIDAvailable] = Observation{*r.MaxPID - *r.NumOfRunningProcesses, *r.MaxPID, r.Time.Time}
	}
	return obs
}

func observeFs(obs Observations, fs *statsapi.FsStats, bytes, inodes Signal) {
	if fs == nil {
		return
	}
	if fs.AvailableBytes != nil && fs.CapacityBytes != nil {
		obs[bytes] = Observation{int64(*fs.AvailableBytes), int64(*fs.CapacityBytes), fs.Time.Time}
	}
	if fs.InodesFree != nil && fs.Inodes != nil {
		obs[inodes] = Observation{int64(*fs.InodesFree), int64(*fs.Inodes), fs.Time.Time}
	}
}
