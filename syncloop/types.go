package syncloop

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// Op is the kind of a PodUpdate, as upstream's kubetypes.PodOperation.
type Op int

// The operations a PodUpdate carries.
const (
	// ADD: pods new to their source.
	ADD Op = iota
	// UPDATE: pods whose spec, labels or annotations changed.
	UPDATE
	// DELETE: pods that were gracefully deleted (a deletion timestamp
	// appeared). Handlers treat it as an update.
	DELETE
	// REMOVE: pods gone from their source; they should be stopped now.
	REMOVE
	// RECONCILE: pods whose status alone changed at the source.
	RECONCILE
)

// String returns "ADD", "UPDATE", "DELETE", "REMOVE" or "RECONCILE".
func (o Op) String() string {
	switch o {
	case ADD:
		return "ADD"
	case UPDATE:
		return "UPDATE"
	case DELETE:
		return "DELETE"
	case REMOVE:
		return "REMOVE"
	case RECONCILE:
		return "RECONCILE"
	}
	return "UNKNOWN"
}

// PodUpdate is one change dispatched to the Handler: an operation on pods of
// one source.
type PodUpdate struct {
	// Op is what happened to Pods.
	Op Op
	// Source is the name of the source the pods came from.
	Source string
	// Pods are deep copies owned by the receiver.
	Pods []*v1.Pod
}

// PodConfigHandler receives the pod configuration changes of the merged
// sources. Methods are called from the loop goroutine, one at a time, never
// concurrently; they may block (the loop waits), and own the pods they are
// given (they may keep and mutate them).
type PodConfigHandler interface {
	// HandlePodAdditions is called for pods new to their source (ADD).
	HandlePodAdditions(ctx context.Context, pods []*v1.Pod)
	// HandlePodUpdates is called for changed and gracefully deleted pods
	// (UPDATE and DELETE, like upstream).
	HandlePodUpdates(ctx context.Context, pods []*v1.Pod)
	// HandlePodRemoves is called for pods gone from their source (REMOVE).
	HandlePodRemoves(ctx context.Context, pods []*v1.Pod)
	// HandlePodReconcile is called for pods whose status changed at the
	// source (RECONCILE).
	HandlePodReconcile(ctx context.Context, pods []*v1.Pod)
}

// Handler is what the host implements: upstream's SyncHandler, with ctx on
// every method. It grows PodConfigHandler by the two loop-driven calls. The
// threading rules of PodConfigHandler apply.
type Handler interface {
	PodConfigHandler
	// HandlePodSyncs is called for pods to sync: those with a PLEG event
	// worth a sync, a probe result, or due per Config.PodsToSync.
	HandlePodSyncs(ctx context.Context, pods []*v1.Pod)
	// HandlePodCleanups is housekeeping, called every HousekeepingPeriod
	// once every source has been dispatched at least once and the runtime
	// is healthy. An error is logged.
	HandlePodCleanups(ctx context.Context) error
}

// SetFunc replaces the full set of pods of one source (a snapshot). It never
// blocks and may be called from any goroutine. The loop never modifies the
// pods passed and may keep parts of them: a source replaces a pod that
// changes rather than modifying it, as an informer's store does.
type SetFunc func(ctx context.Context, pods []*v1.Pod)

// Source produces snapshots of the pods of one configuration source.
type Source interface {
	// Name is the source's unique name, written into the
	// kubernetes.io/config.source annotation.
	Name() string
	// Run sends a snapshot through set at least once when it has a first
	// complete view (the source is then "ready") and again after each
	// change, until ctx is done. It returns nil on cancel and must leave no
	// goroutine behind.
	Run(ctx context.Context, set SetFunc) error
}
