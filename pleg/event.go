package pleg

import "k8s.io/apimachinery/pkg/types"

// EventType is the kind of a PodLifecycleEvent.
type EventType string

// The event types, named as upstream's.
const (
	// ContainerStarted: a container of the pod is now running. Data is the
	// container ID.
	ContainerStarted EventType = "ContainerStarted"
	// ContainerDied: a container of the pod exited. Data is the container ID.
	ContainerDied EventType = "ContainerDied"
	// ContainerRemoved: a container of the pod is gone from the runtime.
	// Data is the container ID.
	ContainerRemoved EventType = "ContainerRemoved"
	// PodSync: the pod's state changed in a way no more specific event
	// describes, or the pod must be re-inspected; Data is nil.
	PodSync EventType = "PodSync"
	// ContainerChanged: a container moved to an unknown state or between
	// non-running states. Data is the container ID.
	ContainerChanged EventType = "ContainerChanged"
)

// PodLifecycleEvent tells the sync loop that something happened to a pod in
// the container runtime.
type PodLifecycleEvent struct {
	// ID is the pod UID (the sandbox metadata's UID).
	ID types.UID
	// Type is what happened.
	Type EventType
	// Data is the container ID (a string, the runtime's ID without scheme)
	// for container events, nil otherwise.
	Data any
}
