package lease

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// Run renews every managed lease on schedule until ctx is done, with at most
// Workers renewals in flight. It returns nil once ctx is done and all its
// goroutines have ended.
func (c *Controller) Run(ctx context.Context) error {
	work := make(chan dueEntry)
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Go(func() {
			for d := range work {
				_ = c.renewAndReschedule(ctx, d.e, d.due) // logged and counted inside
			}
		})
	}
	defer func() {
		close(work)
		wg.Wait()
	}()

	for {
		due, wait := c.popDue()
		for i, d := range due {
			select {
			case work <- d:
			case <-ctx.Done():
				c.requeue(due[i:])
				return nil
			}
		}
		if len(due) > 0 {
			continue // more may have become due while dispatching
		}
		if !c.sleep(ctx, wait) {
			return nil
		}
	}
}

type dueEntry struct {
	e   *entry
	due time.Time
}

// popDue takes the entries due now (or by the end of the current batch,
// BatchWindow) off the schedule and marks them in flight. It also returns
// how long until the next one is due (-1: none).
func (c *Controller) popDue() ([]dueEntry, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Clock.Now()
	if c.queue.Len() > 0 && !c.queue[0].due.After(now) && c.batchUntil.Before(now) {
		c.batchUntil = now.Add(c.cfg.BatchWindow) // a due entry opens a batch
	}
	until := now
	if c.batchUntil.After(until) {
		until = c.batchUntil
	}
	var due []dueEntry
	for c.queue.Len() > 0 && !c.queue[0].due.After(until) && len(due) < c.cfg.Workers {
		e := heap.Pop(&c.queue).(*entry)
		e.inFlight = true
		c.inFlight++
		due = append(due, dueEntry{e: e, due: e.due})
	}
	if len(due) > 0 || c.queue.Len() == 0 {
		return due, -1
	}
	return nil, c.queue[0].due.Sub(now)
}

// requeue puts entries that were popped but never dispatched back.
func (c *Controller) requeue(due []dueEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range due {
		d.e.inFlight = false
		c.inFlight--
		if !d.e.removed {
			heap.Push(&c.queue, d.e)
		}
	}
}

// sleep waits for wait (forever if negative), a nudge, or ctx. It reports
// false when ctx is done.
func (c *Controller) sleep(ctx context.Context, wait time.Duration) bool {
	// The timer exists before the loop counts as sleeping (NextWake): a
	// test that steps a fake clock once NextWake is ok must find it armed.
	var tick <-chan time.Time
	if wait >= 0 {
		t := c.cfg.Clock.NewTimer(wait)
		defer t.Stop()
		tick = t.C()
	}
	c.mu.Lock()
	c.sleeping, c.sleepUntil = true, time.Time{}
	if wait >= 0 {
		c.sleepUntil = c.cfg.Clock.Now().Add(wait)
	}
	c.mu.Unlock()
	woken, done := false, false
	select {
	case <-tick:
	case <-c.wake:
		woken = true
	case <-ctx.Done():
		done = true
	}
	c.mu.Lock()
	c.sleeping = false
	if woken {
		c.nudged = false // the nudge is taken
	}
	c.mu.Unlock()
	return !done
}
