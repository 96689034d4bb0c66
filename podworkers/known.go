package podworkers

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
)

// SyncKnownPods reconciles the workers with the host's desired pods, for
// housekeeping. Pods not in desired are orphans: a finished orphan is
// forgotten, an orphan that never started is forgotten without any sync, and
// a running orphan starts terminating (with the grace period of its last
// known pod) and is driven to finished by the workers themselves. A finished
// pod that received an UpdateCreate after termination is forgotten too, so
// the host can start its UID again. It returns the pods still known, which
// excludes those forgotten: the host must send an UpdateCreate for every
// desired pod missing from the result. After the first call the query
// methods treat unknown UIDs as having nothing running.
//
// desired must be current when the call is made: a pod the host sends to
// UpdatePod after building desired and before this call is an orphan to it.
// Hosts whose pod deliveries run on other goroutines (informer handlers)
// serialise them with building desired and this call, as the kubelet does by
// running both on its one sync loop goroutine.
func (w *Workers) SyncKnownPods(ctx context.Context, desired sets.Set[types.UID]) map[types.UID]WorkerSync {
	logger := klog.FromContext(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.podsSynced = true
	known := make(map[types.UID]WorkerSync, len(w.pods))
	for uid, st := range w.pods {
		orphan := !desired.Has(uid)
		if (orphan || st.restartRequested) && w.removeIfDone(logger, st, orphan) {
			continue
		}
		ws := WorkerSync{State: st.state(), Orphan: orphan}
		var pod *v1.Pod
		switch {
		case st.hasActive:
			pod = st.activePod()
		case st.pending != nil:
			pod = st.pending.Pod
		}
		switch {
		case pod != nil:
			ws.HasConfig = true
			ws.Static = w.cfg.IsStatic(pod)
		case st.hasActive && st.released:
			ws.HasConfig, ws.Static = true, st.releasedStatic
		}
		known[uid] = ws
	}
	return known
}

// removeIfDone forgets a finished pod and reports true. For an orphan that
// is not finished it forgets it if it never started, or else makes sure it
// is terminating and has work. Called with mu held.
func (w *Workers) removeIfDone(logger klog.Logger, st *podState, orphan bool) bool {
	logger = klog.LoggerWithValues(logger, "podUID", st.uid)
	if !st.finished {
		if !orphan {
			logger.V(4).Info("Pod worker has been requested for removal but is still not fully terminated")
			return false
		}
		st.deleted = true
		switch {
		case !st.started() && !st.observedRuntime:
			logger.V(4).Info("Pod is orphaned and has not been started")
		case !st.terminationRequested():
			st.terminating = true
			g, _ := effectiveGracePeriod(st.grace(), st.pod(w.cfg.LookupPod), nil)
			st.setGrace(g)
			w.requeueLast(st)
			if st.cancel != nil {
				st.cancel()
			}
			logger.V(4).Info("Pod is orphaned and still running, began terminating")
			return false
		default:
			w.requeueLast(st)
			logger.V(4).Info("Pod is orphaned and still terminating, notified the pod worker")
			return false
		}
	}
	if st.restartRequested {
		logger.V(4).Info("Pod has been terminated but another pod with the same UID was created, remove history to allow restart")
	} else {
		logger.V(4).Info("Pod has been terminated and is no longer known to the kubelet, remove all history")
	}
	w.forget(st)
	return true
}

// PodState returns the lifecycle state of a known pod.
func (w *Workers) PodState(uid types.UID) (State, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if st, ok := w.pods[uid]; ok {
		return st.state(), true
	}
	return 0, false
}

// query answers from the pod's state if known, or with unknown otherwise.
func (w *Workers) query(uid types.UID, known func(*podState) bool, unknown func(synced bool) bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if st, ok := w.pods[uid]; ok {
		return known(st)
	}
	return unknown(w.podsSynced)
}

func synced(s bool) bool    { return s }
func notSynced(s bool) bool { return !s }
func never(bool) bool       { return false }

// IsPodKnownTerminated reports whether the pod's containers are known to be
// stopped (SyncTerminatingPod succeeded). It is false for unknown pods, so
// it suits filtering the desired set (admission), not cleanup.
func (w *Workers) IsPodKnownTerminated(uid types.UID) bool {
	return w.query(uid, (*podState).terminated, never)
}

// CouldHaveRunningContainers reports whether the pod may have running
// containers: true for a known pod until it is terminated, and for an
// unknown pod until the first SyncKnownPods.
func (w *Workers) CouldHaveRunningContainers(uid types.UID) bool {
	return w.query(uid, func(st *podState) bool { return !st.terminated() }, notSynced)
}

// ShouldPodBeFinished reports whether the pod is finished (SyncTerminatedPod
// succeeded); an unknown pod counts as finished after the first
// SyncKnownPods.
func (w *Workers) ShouldPodBeFinished(uid types.UID) bool {
	return w.query(uid, func(st *podState) bool { return st.finished }, synced)
}

// IsPodTerminationRequested reports whether termination was requested for a
// known pod (its containers may still be starting). It is false for unknown
// pods: cleanup loops should use ShouldPodContainersBeTerminating.
func (w *Workers) IsPodTerminationRequested(uid types.UID) bool {
	return w.query(uid, (*podState).terminationRequested, never)
}

// ShouldPodContainersBeTerminating reports whether a worker has observed the
// pod's termination, so no container of it will start again; for an unknown
// pod, whether SyncKnownPods ran once.
func (w *Workers) ShouldPodContainersBeTerminating(uid types.UID) bool {
	return w.query(uid, func(st *podState) bool { return st.startedTerminating }, synced)
}

// ShouldPodRuntimeBeRemoved reports whether the pod's runtime resources other
// than containers (volumes, devices) may be torn down: once it is
// terminated, or for an unknown pod once SyncKnownPods ran.
func (w *Workers) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	return w.query(uid, (*podState).terminated, synced)
}

// ShouldPodContentBeRemoved reports whether all the pod's content may be
// removed: at once for an evicted pod, once terminated for a deleted pod,
// and for an unknown pod once SyncKnownPods ran.
func (w *Workers) ShouldPodContentBeRemoved(uid types.UID) bool {
	return w.query(uid, func(st *podState) bool { return st.evicted || (st.deleted && st.terminated()) }, synced)
}

// IsPodForMirrorPodTerminatingByFullName reports whether the static pod
// holding fullName (name_namespace) is terminating and not yet terminated,
// so its mirror pod must not be deleted yet.
func (w *Workers) IsPodForMirrorPodTerminatingByFullName(fullName string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	uid, ok := w.startedStatic[fullName]
	if !ok {
		return false
	}
	st, ok := w.pods[uid]
	return ok && st.terminationRequested() && !st.terminated()
}
