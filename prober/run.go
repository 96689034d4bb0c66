package prober

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// Run probes on schedule until ctx is done, with at most Config.Workers
// probes in flight, and delivers result updates on the Updates channels. It
// uses one timer on the injected clock for all probes. It returns nil once
// ctx is done and all its goroutines have ended; probes in flight are
// cancelled and their results discarded. Run must not be called twice at
// once.
func (m *Manager) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, c := range m.results {
		wg.Go(func() { c.pump(ctx) })
	}
	work := make(chan *worker)
	for range m.cfg.Workers {
		wg.Go(func() {
			for w := range work {
				m.runWorker(ctx, w)
			}
		})
	}
	defer func() {
		close(work)
		wg.Wait()
	}()

	timer := m.cfg.Clock.NewTimer(time.Hour)
	timer.Stop()
	for {
		due, wait := m.popDue(m.cfg.Workers)
		for i, w := range due {
			select {
			case work <- w:
			case <-ctx.Done():
				m.requeue(due[i:])
				return nil
			}
		}
		if len(due) > 0 {
			continue
		}
		var tick <-chan time.Time
		var until time.Time
		if wait >= 0 {
			timer.Reset(wait)
			tick = timer.C()
			until = m.cfg.Clock.Now().Add(wait)
		}
		m.setIdle(true, until, false)
		select {
		case <-ctx.Done():
			m.setIdle(false, time.Time{}, false)
			return nil
		case <-m.wake:
			m.setIdle(false, time.Time{}, true)
		case <-tick:
			m.setIdle(false, time.Time{}, false)
		}
		if !timer.Stop() && wait >= 0 {
			select { // drain a tick that fired while woken otherwise
			case <-timer.C():
			default:
			}
		}
	}
}

// setIdle records whether Run waits and until when; taken clears the
// wake-up Run just took.
func (m *Manager) setIdle(idle bool, until time.Time, taken bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.idle, m.idleUntil = idle, until
	if taken {
		m.kicked = false
	}
}

// NextWake tells when Run's next probe is due, on Config.Clock, while Run
// waits for it: ok is false while probes run or are being dispatched, while
// Run has a wake-up to take, or when it is not running; next is the zero time if no probe is
// scheduled. A test on a fake clock waits until ok before stepping the clock
// to next: the fake clock also holds the timeouts of probes in flight, so
// "the clock has waiters" does not mean Run waits.
//
// A next not after the clock's now means the timer has fired and Run is
// about to wake: not parked yet, ask again. Package clockdrive steps a fake
// clock over these methods.
func (m *Manager) NextWake() (next time.Time, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.idle || m.kicked || m.inFlight > 0 {
		return time.Time{}, false
	}
	return m.idleUntil, true
}

// RunOnce runs, one after the other on the calling goroutine, every probe
// whose time has come, and returns how many ran. It is Run's core for hosts
// that drive time themselves, and for tests. It never waits for a consumer
// of Updates.
func (m *Manager) RunOnce(ctx context.Context) int {
	n := 0
	for {
		due, _ := m.popDue(1 << 30)
		if len(due) == 0 {
			return n
		}
		for _, w := range due {
			m.runWorker(ctx, w)
		}
		n += len(due)
	}
}

// popDue takes up to limit workers due now off the schedule and marks them
// running. Without any due it returns how long until the next (-1: none).
func (m *Manager) popDue(limit int) ([]*worker, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.cfg.Clock.Now()
	var due []*worker
	for len(m.queue) > 0 && !m.queue[0].next.After(now) && len(due) < limit {
		w := heap.Pop(&m.queue).(*worker)
		w.running = true
		m.inFlight++
		due = append(due, w)
	}
	if len(due) > 0 || len(m.queue) == 0 {
		return due, -1
	}
	return nil, m.queue[0].next.Sub(now)
}

// requeue puts back workers that were popped but never run.
func (m *Manager) requeue(ws []*worker) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range ws {
		w.running = false
		m.inFlight--
		if w.stopped {
			m.retire(w)
			continue
		}
		heap.Push(&m.queue, w) // unchanged next
	}
}

// runWorker probes once and schedules the next run.
func (m *Manager) runWorker(ctx context.Context, w *worker) {
	started := m.cfg.Clock.Now()
	if m.onStart != nil {
		m.onStart(w.next, started)
	}
	m.metrics.late(started.Sub(w.next).Seconds())
	keep := ctx.Err() != nil || w.doProbe(ctx, started)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finishLocked(w, keep, m.cfg.Clock.Now())
}

// finishLocked reschedules a worker that is done running (or was never
// run, in requeue) at its next slot after now, or retires it if it was
// stopped or asked to stop.
func (m *Manager) finishLocked(w *worker, keep bool, now time.Time) {
	w.running = false
	m.inFlight--
	if !keep && !w.stopped {
		w.stopped = true
		if m.workers[w.key] == w {
			delete(m.workers, w.key)
		}
	}
	if w.stopped {
		m.retire(w)
		return
	}
	if !w.slot.After(now) {
		w.slot = nextRun(w.slot, now, w.spec.period)
	}
	w.next = w.slot
	if w.triggered {
		w.triggered = false
		w.next = m.cfg.Clock.Now()
	}
	heap.Push(&m.queue, w)
	m.kickLocked(w)
}
