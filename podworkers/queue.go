package podworkers

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// DuePods returns, and removes from the work queue, the pods whose resync
// (ResyncInterval plus jitter after a successful sync) or retry
// (BackOffPeriod plus jitter after a failed one) is due on the Clock. The
// host's sync loop polls it (upstream: every second) and sends an
// UpdateSync with its latest pod for each, or calls Resync for a pod it no
// longer has. Finished and forgotten pods are never returned.
func (w *Workers) DuePods() []types.UID {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.cfg.Clock.Now()
	at := stampAt(w.epoch, now)
	var uids []types.UID
	for uid, st := range w.pods {
		if st.hasDue && st.due <= at {
			uids = append(uids, uid)
			st.hasDue = false
		}
	}
	return uids
}

// NextDue returns the earliest time a pod in the work queue is due, and
// false if the queue is empty, for hosts that sleep until then instead of
// polling.
func (w *Workers) NextDue() (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var next stamp
	found := false
	for _, st := range w.pods {
		if st.hasDue && (!found || st.due < next) {
			next, found = st.due, true
		}
	}
	if !found {
		return time.Time{}, false
	}
	return next.time(w.epoch), true
}

// setDue puts st in the work queue, due at at. Called with mu held.
func (w *Workers) setDue(st *podState, at time.Time) {
	st.due, st.hasDue = stampAt(w.epoch, at), true
}

// dueLen returns how many pods sit in the work queue.
func (w *Workers) dueLen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, st := range w.pods {
		if st.hasDue {
			n++
		}
	}
	return n
}
