package eviction

import (
	v1 "k8s.io/api/core/v1"
)

// Signal names a resource observation that can trigger eviction. Every
// signal is an "available" quantity: a threshold on it is met when the
// observed value drops below the threshold (upstream's LessThan operator,
// the only one it supports).
type Signal string

// The signals of upstream kubelet v1.36.
const (
	// SignalMemoryAvailable is node memory capacity minus working set.
	SignalMemoryAvailable Signal = "memory.available"
	// SignalAllocatableMemoryAvailable is memory available to pods: the
	// allocatable memory minus the pods' working set.
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	// SignalNodeFsAvailable is free space on the filesystem holding the
	// kubelet's root directory (volumes, logs).
	SignalNodeFsAvailable Signal = "nodefs.available"
	// SignalNodeFsInodesFree is free inodes on the node filesystem.
	SignalNodeFsInodesFree Signal = "nodefs.inodesFree"
	// SignalImageFsAvailable is free space on the runtime's image filesystem.
	SignalImageFsAvailable Signal = "imagefs.available"
	// SignalImageFsInodesFree is free inodes on the image filesystem.
	SignalImageFsInodesFree Signal = "imagefs.inodesFree"
	// SignalContainerFsAvailable is free space on the filesystem holding
	// container writable layers. Its thresholds are always derived from
	// nodefs or imagefs (see New), as upstream does.
	SignalContainerFsAvailable Signal = "containerfs.available"
	// SignalContainerFsInodesFree is free inodes on the container filesystem.
	SignalContainerFsInodesFree Signal = "containerfs.inodesFree"
	// SignalPIDAvailable is the PID limit minus the running processes.
	SignalPIDAvailable Signal = "pid.available"
)

// Resource names internal to eviction, as upstream reports them in messages.
const (
	// ResourceInodes is the starved resource of the *.inodesFree signals.
	ResourceInodes v1.ResourceName = "inodes"
	// ResourcePIDs is the starved resource of pid.available.
	ResourcePIDs v1.ResourceName = "pids"
)

// Signals returns every supported signal, in a stable order.
func Signals() []Signal {
	return []Signal{
		SignalMemoryAvailable, SignalAllocatableMemoryAvailable,
		SignalNodeFsAvailable, SignalNodeFsInodesFree,
		SignalImageFsAvailable, SignalImageFsInodesFree,
		SignalContainerFsAvailable, SignalContainerFsInodesFree,
		SignalPIDAvailable,
	}
}

// Valid reports whether s is a supported signal.
func (s Signal) Valid() bool { return s.Resource() != "" }

// Resource is the resource a signal measures: memory, ephemeral-storage,
// inodes or pids; empty for an unknown signal.
func (s Signal) Resource() v1.ResourceName {
	switch s {
	case SignalMemoryAvailable, SignalAllocatableMemoryAvailable:
		return v1.ResourceMemory
	case SignalNodeFsAvailable, SignalImageFsAvailable, SignalContainerFsAvailable:
		return v1.ResourceEphemeralStorage
	case SignalNodeFsInodesFree, SignalImageFsInodesFree, SignalContainerFsInodesFree:
		return ResourceInodes
	case SignalPIDAvailable:
		return ResourcePIDs
	}
	return ""
}

// NodeCondition is the node condition reported while a threshold on s is
// met: MemoryPressure, DiskPressure or PIDPressure.
func (s Signal) NodeCondition() v1.NodeConditionType {
	switch s.Resource() {
	case v1.ResourceMemory:
		return v1.NodeMemoryPressure
	case v1.ResourceEphemeralStorage, ResourceInodes:
		return v1.NodeDiskPressure
	case ResourcePIDs:
		return v1.NodePIDPressure
	}
	return ""
}

// isMemory reports whether s is one of the two memory signals, which
// upstream reclaims before any other.
func (s Signal) isMemory() bool { return s.Resource() == v1.ResourceMemory }
