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
	at := stampAt(w.epoch, w.cfg.Clock.Now())
	var uids []types.UID
	for len(w.queue) > 0 && w.queue[0].due <= at {
		if e := w.queue.pop(); w.queued(e) {
			uids = append(uids, e.st.uid)
			e.st.hasDue = false
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
	for len(w.queue) > 0 {
		if e := w.queue[0]; w.queued(e) {
			return e.due.time(w.epoch), true
		}
		w.queue.pop()
	}
	return time.Time{}, false
}

// setDue puts st in the work queue, due at at. Called with mu held. The
// pod's earlier place in the queue, if any, is left to go stale: DuePods
// skips an entry whose pod is no longer due at its time.
func (w *Workers) setDue(st *podState, at time.Time) {
	st.due, st.hasDue = stampAt(w.epoch, at), true
	w.queue.push(dueEntry{due: st.due, st: st})
	w.compactQueue()
}

// compactQueue rebuilds the work queue from the pods once a fifth of it
// may be stale entries (reschedules; forgotten pods, whose records the
// entries would keep alive until their time), into an array sized for
// what is due (a burst of reschedules does not leave a large one behind).
// Called with mu held, after each push and each forget: the rebuilds cost
// amortized constant time per call.
func (w *Workers) compactQueue() {
	n := len(w.pods)
	if len(w.queue) <= n+n/4+64 {
		return
	}
	due := 0
	for _, st := range w.pods {
		if st.hasDue {
			due++
		}
	}
	q := make(dueQueue, 0, due+due/4+64)
	for _, st := range w.pods {
		if st.hasDue {
			q = append(q, dueEntry{due: st.due, st: st})
		}
	}
	q.init()
	w.queue = q
}

// queued: e is the pod's current place in the work queue (the pod is due
// at e's time and not forgotten). Called with mu held.
func (w *Workers) queued(e dueEntry) bool {
	return e.st.hasDue && e.st.due == e.due && w.pods[e.st.uid] == e.st
}

// dueEntry is a place in the work queue: the stamp the pod was due at
// when queued. It is stale when the pod's due changed since.
type dueEntry struct {
	due stamp
	st  *podState
}

// dueQueue is a binary min-heap of entries by due stamp: DuePods takes
// the due pods from its top, in time proportional to their number rather
// than to every pod's (a walk of 10,000 pods a second cost a virtual-node
// agent more CPU than their resyncs).
type dueQueue []dueEntry

func (q *dueQueue) push(e dueEntry) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if h[parent].due <= h[i].due {
			break
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
}

// pop removes and returns the top entry. The queue must not be empty.
func (q *dueQueue) pop() dueEntry {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = dueEntry{} // drop the reference
	*q = h[:last]
	q.down(0)
	return top
}

func (q dueQueue) down(i int) {
	for {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(q) && q[l].due < q[least].due {
			least = l
		}
		if r < len(q) && q[r].due < q[least].due {
			least = r
		}
		if least == i {
			return
		}
		q[i], q[least] = q[least], q[i]
		i = least
	}
}

func (q dueQueue) init() {
	for i := len(q)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
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
