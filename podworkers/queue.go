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
	var uids []types.UID
	for uid, at := range w.due {
		if !at.After(now) {
			uids = append(uids, uid)
			delete(w.due, uid)
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
	var next time.Time
	for _, at := range w.due {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next, !next.IsZero()
}
