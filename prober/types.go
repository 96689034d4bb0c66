package prober

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/containerid"
)

// ProbeType names the kind of probe.
type ProbeType int

// The three probe kinds.
const (
	Liveness ProbeType = iota
	Readiness
	Startup
)

// String returns "Liveness", "Readiness" or "Startup".
func (t ProbeType) String() string {
	switch t {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	}
	return "Unknown"
}

// Result is the outcome of probing a container, as upstream's results.Result.
type Result int

// The probe results. Unknown is the zero value, so that a missing result is
// never mistaken for a success. (Upstream's values are Unknown=-1,
// Success=0, Failure=1; compare by name, not by number.)
const (
	Unknown Result = iota
	Success
	Failure
)

// String returns "Unknown", "Success" or "Failure".
func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	}
	return "Unknown"
}

// Update is a change of a container's probe result, published to the sync
// loop.
type Update struct {
	// ContainerID is the container's ID, parsed from
	// v1.ContainerStatus.ContainerID ("<runtime>://<id>").
	ContainerID containerid.ID
	// Result is the new result.
	Result Result
	// PodUID is the UID of the container's pod.
	PodUID types.UID
}
