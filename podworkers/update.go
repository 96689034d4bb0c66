package podworkers

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/kubetypes"
)

// UpdatePod delivers a change for one pod. It never blocks on a sync: the
// update replaces any update still pending for the pod and the pod's worker
// picks it up after its current sync.
//
// The pod starts terminating, for good, when it is marked for deletion,
// reaches phase Succeeded or Failed, is killed (UpdateKill), or is a
// RuntimePod. From then on every update acts as a kill: its KillOptions can
// shorten the grace period (which cancels a sync in flight) but never
// lengthen it. An UpdateCreate for a terminating or finished pod records
// that the UID is to restart; SyncKnownPods then forgets the finished pod so
// the host's next UpdateCreate starts it afresh. Other updates for a
// finished pod are ignored (their Completed channel is closed).
//
// A kill for a pod the workers have never seen, with a Pod, runs
// SyncTerminatingPod and SyncTerminatedPod, since the runtime may still hold
// containers of it from before a restart; a static pod killed before it
// started finishes without any sync.
//
// It returns an error wrapping ErrInvalidUpdate, and changes nothing, when
// the update has neither Pod nor RunningPod, an empty UID, an unknown Type,
// or a RunningPod with a type other than UpdateKill.
func (w *Workers) UpdatePod(ctx context.Context, u Update) error {
	logger := klog.FromContext(ctx)
	if u.Type < UpdateSync || u.Type > UpdateKill {
		return fmt.Errorf("%w: unknown update type %d", ErrInvalidUpdate, int(u.Type))
	}
	var uid types.UID
	var name, namespace string
	switch {
	case u.Pod != nil:
		if u.RunningPod != nil {
			logger.V(2).Info("Pod update included RunningPod which is only valid when Pod is not specified", "pod", klog.KObj(u.Pod))
			u.RunningPod = nil
		}
		uid, name, namespace = u.Pod.UID, u.Pod.Name, u.Pod.Namespace
	case u.RunningPod != nil:
		if u.Type != UpdateKill {
			return fmt.Errorf("%w: runtime pod %s/%s can only be killed, not %s", ErrInvalidUpdate, u.RunningPod.Namespace, u.RunningPod.Name, u.Type)
		}
		uid, name, namespace = u.RunningPod.UID, u.RunningPod.Name, u.RunningPod.Namespace
	default:
		return fmt.Errorf("%w: update has neither Pod nor RunningPod", ErrInvalidUpdate)
	}
	if uid == "" {
		return fmt.Errorf("%w: pod %s/%s has an empty UID", ErrInvalidUpdate, namespace, name)
	}
	logger = klog.LoggerWithValues(logger, "pod", klog.KRef(namespace, name), "podUID", uid, "updateType", u.Type)

	w.mu.Lock()
	defer w.mu.Unlock()
	st, known := w.pods[uid]
	if !known {
		logger.V(4).Info("Pod is being synced for the first time")
		st = &podState{uid: uid}
		w.pods[uid] = st
		if u.Pod != nil && w.cfg.IsStatic(u.Pod) {
			w.staticNames[uid] = kubetypes.FullNameOf(name, namespace)
			w.waitStatic(st)
		}
	}
	runtimeKill := u.Pod == nil
	if runtimeKill {
		st.observedRuntime = true
		switch {
		case st.pending != nil && st.pending.Pod != nil:
			u.Pod, u.RunningPod = st.pending.Pod, nil
		case st.hasPod():
			u.Pod, u.RunningPod = st.pod(w.cfg.LookupPod), nil
		}
	}

	if known && st.terminationRequested() && u.Type == UpdateCreate {
		logger.V(4).Info("Pod is terminating but has been requested to restart with same UID, will be reconciled later")
		st.restartRequested = true
		closeKill(u.Kill)
		return nil
	}
	if st.finished {
		logger.V(4).Info("Pod is finished processing, no further updates")
		closeKill(u.Kill)
		return nil
	}
	became, shortened, ignore := w.applyTermination(logger, st, &u, runtimeKill)
	if ignore {
		return nil
	}
	if p := st.pending; p != nil && !p.StartTime.IsZero() && (u.StartTime.IsZero() || p.StartTime.Before(u.StartTime)) {
		u.StartTime = p.StartTime
	}
	u.Kill = nil
	st.pending = &u
	w.schedule(st)
	if (became || shortened) && st.cancel != nil {
		logger.V(3).Info("Cancelling current pod sync", "workType", st.state())
		st.cancel()
	}
	return nil
}

// applyTermination moves st to terminating if u calls for it and folds a
// terminating pod's kill options into st. ignore is true for a runtime kill
// of a pod already terminated. Called with mu held.
func (w *Workers) applyTermination(logger klog.Logger, st *podState, u *Update, runtimeKill bool) (became, shortened, ignore bool) {
	if !st.terminationRequested() {
		switch {
		case runtimeKill:
			logger.V(4).Info("Pod is orphaned and must be torn down")
			st.deleted = true
		case u.Pod.DeletionTimestamp != nil:
			logger.V(4).Info("Pod is marked for graceful deletion, begin teardown")
			st.deleted = true
		case u.Pod.Status.Phase == v1.PodSucceeded || u.Pod.Status.Phase == v1.PodFailed:
			logger.V(4).Info("Pod is in a terminal phase (success/failed), begin teardown")
		case u.Type == UpdateKill:
			logger.V(4).Info("Pod is being removed by the kubelet, begin teardown", "evict", u.Kill != nil && u.Kill.Evict)
		default:
			closeKill(u.Kill)
			return false, false, false
		}
		st.terminating = true
		became = true
	}
	if st.terminated() {
		closeKill(u.Kill)
		if runtimeKill {
			logger.V(3).Info("Pod is waiting for termination, ignoring runtime-only kill until after pod worker is fully terminated")
			return false, false, true
		}
		return false, false, false
	}
	if k := u.Kill; k != nil {
		if k.Completed != nil || k.StatusFunc != nil {
			if st.kill == nil {
				st.kill = &killState{}
			}
			if k.Completed != nil {
				st.kill.completed = append(st.kill.completed, k.Completed)
			}
			if k.StatusFunc != nil {
				st.kill.statusFn = k.StatusFunc
			}
		}
		if k.Evict {
			st.evicted = true
		}
	}
	var g gracePeriod
	g, shortened = effectiveGracePeriod(st.grace(), u.Pod, u.Kill)
	st.setGrace(g)
	return became, shortened, false
}

// closeKill closes the Completed channel of a kill that needs no waiting.
func closeKill(k *KillOptions) {
	if k != nil && k.Completed != nil {
		close(k.Completed)
	}
}

// Resync asks for another sync of a known pod with its last known state,
// for a due pod the host no longer has a newer version of (for example one
// already removed from config that is still terminating). It is a no-op for
// a finished pod or one that has an update pending, and returns an error
// wrapping ErrUnknownPod for a UID the workers do not track.
func (w *Workers) Resync(uid types.UID) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	st, ok := w.pods[uid]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownPod, uid)
	}
	if st.finished {
		return nil
	}
	if st.pending == nil && st.hasActive {
		st.pending = st.replay(UpdateSync)
	}
	if st.pending != nil {
		w.schedule(st)
	}
	return nil
}

// KillPodNow evicts pod through its worker with the given grace period
// (zero forces an immediate kill; statusFn, if set, edits the final
// status) and waits until its containers are stopped or ctx is done, as
// the kubelet's killPodNow. It fits eviction.Config.KillPod.
func (w *Workers) KillPodNow(ctx context.Context, pod *v1.Pod, grace int64, statusFn func(*v1.PodStatus)) error {
	done := make(chan struct{})
	err := w.UpdatePod(ctx, Update{Type: UpdateKill, Pod: pod,
		Kill: &KillOptions{GracePeriodOverride: &grace, Force: grace == 0, Evict: true, StatusFunc: StatusFunc(statusFn), Completed: done}})
	if err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
