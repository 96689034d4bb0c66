package podworkers

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// UpdateType says why UpdatePod is called. The values and their meaning
// match the kubelet's SyncPodType.
type UpdateType int

const (
	// UpdateSync is a periodic or requested resync of an unchanged pod.
	UpdateSync UpdateType = iota
	// UpdateUpdate carries a changed pod from a config source.
	UpdateUpdate
	// UpdateCreate carries a pod seen for the first time.
	UpdateCreate
	// UpdateKill asks for the pod to be terminated.
	UpdateKill
)

// String returns the kubelet's name for the update type.
func (t UpdateType) String() string {
	switch t {
	case UpdateSync:
		return "sync"
	case UpdateUpdate:
		return "update"
	case UpdateCreate:
		return "create"
	case UpdateKill:
		return "kill"
	default:
		return "unknown"
	}
}

// StatusFunc edits the pod status the host is about to report for a pod
// being killed, for example to set phase Failed and reason Evicted. It is
// called by the host's Syncer, never by the workers.
type StatusFunc func(status *v1.PodStatus)

// KillOptions refine an UpdateKill (they are ignored, and Completed is
// closed at once, for a pod that is not terminating).
type KillOptions struct {
	// GracePeriodOverride, if set, asks for a shorter grace period in
	// seconds. A longer value than the one already in force is ignored:
	// grace periods only ever shorten. Values below 1 become 1 unless
	// Force is set.
	GracePeriodOverride *int64
	// Force lets a GracePeriodOverride of 0 (or less) stand as 0 instead of
	// being raised to the 1 second minimum.
	Force bool
	// Evict marks the termination as an eviction; ShouldPodContentBeRemoved
	// then reports true at once.
	Evict bool
	// StatusFunc, if set, is handed to SyncTerminatingPod on every
	// termination attempt; a later kill's func replaces an earlier one.
	StatusFunc StatusFunc
	// Completed, if set, is closed once the pod's containers are known to be
	// stopped (SyncTerminatingPod succeeded), or at once if the pod is
	// already terminated, finished or forgotten. The workers close it
	// exactly once: do not close it yourself and do not pass one channel to
	// two kills.
	Completed chan<- struct{}
}

// RuntimePod is a pod found in the runtime without any config, for example
// an orphan found by housekeeping. It can only be killed.
type RuntimePod struct {
	// UID, Name and Namespace identify the pod; UID is required.
	UID       types.UID
	Name      string
	Namespace string
	// Runtime is host data passed through untouched to
	// SyncTerminatingRuntimePod (for example the containers to stop).
	Runtime any
}

// Update is one change delivered to UpdatePod.
type Update struct {
	// Type of the update.
	Type UpdateType
	// Pod is the desired pod. Required unless RunningPod is set.
	Pod *v1.Pod
	// MirrorPod is the mirror pod of a static pod, if any. When nil the last
	// known mirror pod is kept.
	MirrorPod *v1.Pod
	// RunningPod is a runtime pod with no config; only valid with
	// UpdateKill and a nil Pod (it is dropped when Pod is set).
	RunningPod *RuntimePod
	// Kill refines an UpdateKill; it also applies to updates of other types
	// once the pod is terminating.
	Kill *KillOptions
	// StartTime, if set, is when the host received the change; the time to
	// realise it is observed in the pod worker duration metric (a phase
	// transition replays it), and for a create without a config.seen
	// annotation it is when the pod was first seen.
	StartTime time.Time
}

// Syncer is the runtime work the host plugs in. Its methods are called from
// worker goroutines, concurrently for different pods but never concurrently
// for the same pod UID. They may block, but must return promptly (with an
// error wrapping context.Canceled, or success) once ctx is cancelled: ctx is
// cancelled when a kill or a shorter grace period supersedes the running
// call, and when Run stops. ctx is valid only for the duration of the call.
// Methods must not modify the pods they are given. A panic is recovered and
// treated as an error (see ErrSyncerPanic).
type Syncer interface {
	// SyncPod makes the runtime match pod. It returns terminal=true when the
	// pod has run to completion (for example all containers exited under
	// RestartPolicy Never); the pod then moves to terminating. An error is
	// retried after the backoff.
	SyncPod(ctx context.Context, updateType UpdateType, pod, mirrorPod *v1.Pod) (terminal bool, err error)
	// SyncTerminatingPod stops every container of pod within gracePeriod
	// seconds (0 only if a kill forced it) and applies statusFn, if not
	// nil, to the final status it reports. It is called again, possibly
	// with a shorter grace period, until it returns nil; nil means no
	// container is running or will start.
	SyncTerminatingPod(ctx context.Context, pod *v1.Pod, gracePeriod int64, statusFn StatusFunc) error
	// SyncTerminatingRuntimePod stops every container of a pod that has no
	// config. It returns nil only when all are stopped.
	SyncTerminatingRuntimePod(ctx context.Context, pod *RuntimePod) error
	// SyncTerminatedPod releases what the terminated pod still holds
	// (volumes, cgroups, final status). When it returns nil the pod is
	// finished.
	SyncTerminatedPod(ctx context.Context, pod *v1.Pod) error
}

// State is where a pod is in its lifecycle. The zero State is not a state
// (it prints "unknown"): a missing value is never mistaken for syncing.
type State int

const (
	// StateSyncing pods are expected to run; SyncPod is called for them.
	StateSyncing State = iota + 1
	// StateTerminating pods were asked to stop; SyncTerminatingPod runs
	// until it succeeds.
	StateTerminating
	// StateTerminated pods have no running container; SyncTerminatedPod
	// runs until it succeeds.
	StateTerminated
	// StateFinished pods are done; updates are ignored until SyncKnownPods
	// forgets them.
	StateFinished
)

// String returns a lower-case name of the state.
func (s State) String() string {
	switch s {
	case StateSyncing:
		return "syncing"
	case StateTerminating:
		return "terminating"
	case StateTerminated:
		return "terminated"
	case StateFinished:
		return "finished"
	default:
		return "unknown"
	}
}

// WorkerSync summarises one known pod for SyncKnownPods callers.
type WorkerSync struct {
	// State of the pod.
	State State
	// Orphan is true if the pod was not in the desired set.
	Orphan bool
	// HasConfig is true if a Pod (not only a RuntimePod) is known.
	HasConfig bool
	// Static is true if the known Pod is a static pod.
	Static bool
}
