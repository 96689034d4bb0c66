package podworkers

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/internal/retry"
	"github.com/nodekit/nodekit/kubetypes"
)

// unit is one sync of one pod, prepared under the lock and run without it.
type unit struct {
	st      *podState
	ctx     context.Context
	cancel  context.CancelFunc
	logger  klog.Logger
	work    State
	typ     UpdateType
	pod     *v1.Pod
	mirror  *v1.Pod
	runtime *RuntimePod
	grace   int64
	status  StatusFunc
	after   time.Time
	start   time.Time
}

// begin consumes st's pending update and prepares a sync, or returns nil
// when there is nothing to run now (no work, pod forgotten, static pod
// waiting, pod finished without starting, or ctx done). When it returns nil
// the caller no longer owns st.
func (w *Workers) begin(ctx context.Context, st *podState) *unit {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pods[st.uid] != st || st.finished || st.pending == nil {
		st.working = false
		st.pending = nil
		return nil
	}
	if ctx.Err() != nil {
		// Stopping: hand the pod back for the next Run or ProcessPending.
		st.queued = true
		w.runnable = append(w.runnable, st)
		return nil
	}
	work := st.state()
	upd := st.pending
	st.pending = nil
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "podUID", st.uid)
	if upd.Pod != nil {
		logger = klog.LoggerWithValues(logger, "pod", klog.KObj(upd.Pod))
	}
	if !st.started() && !(upd.RunningPod != nil && work == StateTerminating) {
		if !w.allowStart(logger, st, upd) {
			return nil
		}
		st.hasStarted = true
		w.metrics.podStarted(upd.Pod)
	}
	st.merge(upd)
	st.active.start = 0
	if !upd.StartTime.IsZero() {
		st.active.start = stampAt(w.epoch, upd.StartTime)
	}
	if !st.hydrate(w.cfg.LookupPod) {
		if work == StateSyncing {
			// A dropped pod that left its source: nothing to sync (a
			// provider must not get a pod without its spec); SyncKnownPods
			// or a kill terminates it.
			logger.V(4).Info("Pod left its source, not syncing it")
			st.working = false
			return nil
		}
		st.setPod(st.stub()) // to terminate it
	}
	if work == StateTerminating && !st.startedTerminating {
		logger.V(4).Info("Pod worker has observed request to terminate")
		st.startedTerminating = true
	}
	uctx, cancel := context.WithCancel(ctx)
	st.cancel = cancel
	return &unit{
		st: st, ctx: uctx, cancel: cancel, logger: logger, work: work,
		typ: upd.Type, pod: st.active.pod, mirror: st.active.mirror, runtime: upd.RunningPod, // (merge set active)
		grace: st.graceSeconds, status: st.statusFn(), after: st.lastSync.time(w.epoch), start: upd.StartTime,
	}
}

// allowStart decides whether a pod that never started may start now. A
// static pod waits for its full name to be free and, if termination was
// requested before it started, finishes without any sync. When it returns
// false the caller no longer owns st. Called with mu held.
func (w *Workers) allowStart(logger klog.Logger, st *podState, upd *Update) bool {
	if upd.Pod == nil || !w.cfg.IsStatic(upd.Pod) {
		return true
	}
	if _, ok := w.staticNames[st.uid]; !ok { // first seen as a runtime pod
		w.staticNames[st.uid] = kubetypes.FullNameOf(upd.Pod.Name, upd.Pod.Namespace)
	}
	if st.terminationRequested() {
		logger.V(4).Info("Static pod was terminated before it started")
		w.finishUnstarted(st)
		return false
	}
	if !w.allowStaticStart(st) {
		logger.V(4).Info("Static pod waits for another pod with the same full name", "fullName", w.staticNames[st.uid])
		st.pending = upd
		st.working = false
		return false
	}
	return true
}

// execute waits for fresh status and calls the Syncer, turning a panic into
// an error wrapping ErrSyncerPanic.
func (w *Workers) execute(u *unit) (terminal bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			u.logger.Error(nil, "Observed a panic in a pod syncer", "panic", r, "stack", string(debug.Stack()))
			w.metrics.recordPanic()
			terminal, err = false, fmt.Errorf("%w: %v", ErrSyncerPanic, r)
		}
	}()
	u.logger.V(4).Info("Processing pod event", "workType", u.work, "updateType", u.typ)
	if u.runtime == nil && w.cfg.StatusBarrier != nil {
		w.mu.Lock()
		w.inBarrier++
		w.mu.Unlock()
		err := w.cfg.StatusBarrier(u.ctx, u.st.uid, u.after)
		w.mu.Lock()
		w.inBarrier--
		w.mu.Unlock()
		if err != nil {
			if w.cfg.Recorder != nil && u.pod != nil {
				w.cfg.Recorder.Eventf(u.pod, v1.EventTypeWarning, "FailedSync", "error determining status: %v", err)
			}
			return false, fmt.Errorf("waiting for pod status: %w", err)
		}
	}
	s := w.cfg.Syncer
	switch {
	case u.work == StateTerminated:
		return false, s.SyncTerminatedPod(u.ctx, u.pod)
	case u.work == StateTerminating && u.runtime != nil:
		return false, s.SyncTerminatingRuntimePod(u.ctx, u.runtime)
	case u.work == StateTerminating:
		return false, s.SyncTerminatingPod(u.ctx, u.pod, u.grace, u.status)
	default:
		if u.typ == UpdateCreate {
			w.metrics.started(u.pod, u.start, w.cfg.Clock.Now())
		}
		return s.SyncPod(u.ctx, u.typ, u.pod, u.mirror)
	}
}

// finish records the outcome of a sync, moves the pod to its next phase and
// sets its next due time. It reports whether the caller still owns the pod
// and should run its pending work.
func (w *Workers) finish(u *unit, terminal bool, err error) bool {
	canceled := errors.Is(err, context.Canceled) && u.ctx.Err() != nil
	u.cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	st := u.st
	now := w.cfg.Clock.Now()
	st.cancel = nil
	st.lastSync = stampAt(w.epoch, now)
	if !u.start.IsZero() {
		w.metrics.observe(u, now.Sub(u.start))
	}
	if w.pods[st.uid] != st {
		st.working = false
		return false
	}
	transition := false
	switch {
	case canceled:
		u.logger.V(2).Info("Sync exited with context cancellation error", "workType", u.work)
		w.requeueLast(st)
	case err != nil:
		u.logger.Error(err, "Error syncing pod, skipping", "workType", u.work)
		w.setDue(st, now.Add(w.backOff(err)))
	case u.work == StateTerminated:
		u.logger.V(4).Info("Pod is complete and the worker can now stop")
		w.finishPod(st)
		return false
	case u.work == StateTerminating && u.runtime != nil:
		u.logger.V(4).Info("Pod terminated all orphaned containers successfully and worker can now stop")
		w.finishPod(st)
		w.forget(st)
		return false
	case u.work == StateTerminating:
		u.logger.V(4).Info("Pod terminated all containers successfully")
		st.hasTerminated = true
		st.endKill()
		transition = true
	case terminal:
		u.logger.V(4).Info("Pod is terminal")
		if !st.terminationRequested() {
			st.terminating = true
			g, _ := effectiveGracePeriod(st.grace(), st.activePod(), nil)
			st.setGrace(g)
		}
		st.startedTerminating = true
		transition = true
	default:
		w.setDue(st, now.Add(retry.Jitter(w.cfg.ResyncInterval, w.cfg.ResyncJitter, w.cfg.Rand())))
		if p := st.activePod(); w.cfg.LookupPod != nil && st.pending == nil && p != nil {
			st.release(w.cfg.IsStatic(p))
		}
	}
	if transition {
		st.hasDue = false
		w.requeueLast(st)
	}
	if st.pending != nil {
		return true
	}
	st.working = false
	return false
}

// RetryAfter is implemented by a Syncer error that knows when the sync is
// worth retrying, sooner or later than Config.BackOffPeriod: a volume mount
// retried with its own exponential back-off, a network not ready yet. The
// workers look for it with errors.As, so it may be wrapped or joined.
type RetryAfter interface {
	error
	// RetryAfter is the delay before the pod is due again; zero or less
	// means Config.BackOffPeriod.
	RetryAfter() time.Duration
}

// backOff is how long a pod whose sync failed with err waits: the error's
// RetryAfter if it has one, else the jittered BackOffPeriod.
func (w *Workers) backOff(err error) time.Duration {
	if ra, ok := errors.AsType[RetryAfter](err); ok {
		if d := ra.RetryAfter(); d > 0 {
			return d
		}
	}
	return retry.Jitter(w.cfg.BackOffPeriod, w.cfg.BackOffJitter, w.cfg.Rand())
}

// finishPod marks st finished: no more syncs until SyncKnownPods forgets it.
// Called with mu held.
func (w *Workers) finishPod(st *podState) {
	st.hasTerminated = true
	st.finished = true
	st.working = false
	st.pending = nil
	st.endKill()
	st.hasDue = false
	w.releaseStatic(st)
}

// finishUnstarted finishes a pod terminated before it ever started; no
// Syncer method runs for it. Called with mu held.
func (w *Workers) finishUnstarted(st *podState) {
	w.finishPod(st)
}

// requeueLast replays the pod's last update unless an update is already
// pending or the pod never started. Called with mu held.
func (w *Workers) requeueLast(st *podState) {
	if st.pending != nil || !st.hasActive {
		return
	}
	st.pending = st.replay(UpdateType(st.activeType))
	if a := st.active; a != nil && a.start != 0 {
		st.pending.StartTime = a.start.time(w.epoch)
	}
	w.schedule(st)
}

// forget drops every trace of st. Called with mu held.
func (w *Workers) forget(st *podState) {
	if w.pods[st.uid] == st {
		delete(w.pods, st.uid)
	}
	st.hasDue = false
	w.compactQueue()
	st.endKill()
	w.releaseStatic(st)
	w.unwaitStatic(st)
	if w.pods[st.uid] == nil {
		delete(w.staticNames, st.uid)
	}
}
