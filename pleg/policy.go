package pleg

import (
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit/nodekit/containerid"
)

// State is the generator's view of a container or sandbox in one listing.
// It mirrors upstream's plegContainerState.
type State uint8

// The states. NonExistent (the zero value) is a container absent from a
// listing.
const (
	NonExistent State = iota
	Running
	Exited
	Unknown
)

// String returns the state's name as upstream logs it.
func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Exited:
		return "exited"
	case Unknown:
		return "unknown"
	}
	return "non-existent"
}

// ContainerState maps a CRI container state: CREATED counts as Unknown, as
// upstream does (the kubelet does not act on it).
func ContainerState(s runtimeapi.ContainerState) State {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return Running
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return Exited
	}
	return Unknown
}

// SandboxState maps a CRI sandbox state: a ready sandbox is Running, any
// other Exited, as upstream does.
func SandboxState(s runtimeapi.PodSandboxState) State {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return Running
	}
	return Exited
}

// Transition returns the events a change of one container (or sandbox) from
// old to cur produces, appended to dst: the upstream table.
//
//	cur Running      → ContainerStarted
//	cur Exited       → ContainerDied
//	cur Unknown      → ContainerChanged
//	cur NonExistent  → ContainerRemoved if old was Exited,
//	                   else ContainerDied then ContainerRemoved
//
// No change produces nothing.
func Transition(dst []PodLifecycleEvent, uid types.UID, id containerid.ID, old, cur State) []PodLifecycleEvent {
	if old == cur {
		return dst
	}
	switch cur {
	case Running:
		return append(dst, PodLifecycleEvent{ID: uid, Type: ContainerStarted, ContainerID: id})
	case Exited:
		return append(dst, PodLifecycleEvent{ID: uid, Type: ContainerDied, ContainerID: id})
	case Unknown:
		return append(dst, PodLifecycleEvent{ID: uid, Type: ContainerChanged, ContainerID: id})
	}
	if old != Exited {
		dst = append(dst, PodLifecycleEvent{ID: uid, Type: ContainerDied, ContainerID: id})
	}
	return append(dst, PodLifecycleEvent{ID: uid, Type: ContainerRemoved, ContainerID: id})
}
