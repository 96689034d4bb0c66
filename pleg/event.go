package pleg

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/containerid"
)

// EventType is the kind of a PodLifecycleEvent.
type EventType string

// The event types, named as upstream's.
const (
	// ContainerStarted: a container of the pod is now running. ContainerID
	// names the container.
	ContainerStarted EventType = "ContainerStarted"
	// ContainerDied: a container of the pod exited.
	// ContainerID names the container.
	ContainerDied EventType = "ContainerDied"
	// ContainerRemoved: a container of the pod is gone from the runtime.
	// ContainerID names the container.
	ContainerRemoved EventType = "ContainerRemoved"
	// PodSync: the pod's state changed in a way no more specific event
	// describes, or the pod must be re-inspected; ContainerID is empty.
	PodSync EventType = "PodSync"
	// ContainerChanged: a container moved to an unknown state or between
	// non-running states. ContainerID names the container.
	ContainerChanged EventType = "ContainerChanged"
)

// PodLifecycleEvent tells the sync loop that something happened to a pod in
// the container runtime.
type PodLifecycleEvent struct {
	// ID is the pod UID (the sandbox metadata's UID).
	ID types.UID
	// Type is what happened.
	Type EventType
	// ContainerID names the container of a container event (its Type is
	// Config.RuntimeName) and is empty for PodSync.
	ContainerID containerid.ID
}
