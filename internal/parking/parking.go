// Package parking is the state behind the blocks' NextWake methods
// (clockdrive.Waker: pleg, eviction, nodestatus, syncloop, ...): when a
// Run loop is parked, until when, and whether a wake-up it has not taken yet is pending. One convention for
// every block: ok is false while the loop works, while a wake-up it listens
// to is pending, and when it is not running.
package parking

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// State is one Run loop's parking state. The zero value is "not parked".
// All methods are safe for concurrent use.
type State struct {
	mu          sync.Mutex
	until       time.Time
	woken, deaf bool
}

// Park records that the loop waits until t (zero: it does not wait), deaf
// to wake-ups or not (a deaf loop waits for t only); taken clears the
// wake-up the loop just took.
func (p *State) Park(t time.Time, deaf, taken bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if taken {
		p.woken = false
	}
	p.until, p.deaf = t, deaf
}

// Wake records a wake-up the loop has not taken yet. Call it before
// signalling the loop.
func (p *State) Wake() {
	p.mu.Lock()
	p.woken = true
	p.mu.Unlock()
}

// Next is the accessor: the time the parked loop waits for, and false while
// it is not parked or a wake-up it listens to is pending.
func (p *State) Next() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.until.IsZero() || (p.woken && !p.deaf) {
		return time.Time{}, false
	}
	return p.until, true
}

// TickAfter returns the first tick strictly after now of a ticker of
// period started at start: when a fake clock's ticker fires next.
func TickAfter(start, now time.Time, period time.Duration) time.Time {
	if !now.Before(start) {
		start = start.Add((now.Sub(start)/period + 1) * period)
	}
	return start
}

// Every runs pass at once and then on every tick of a ticker of period on
// clk, until ctx is done, keeping p parked between passes until the next
// tick (deaf to other wake-ups): the whole Run loop of a block that only
// works on a period. It returns when ctx is done.
func (p *State) Every(ctx context.Context, clk clock.WithTicker, period time.Duration, pass func()) {
	start := clk.Now()
	t := clk.NewTicker(period)
	defer t.Stop()
	for {
		pass()
		p.Park(TickAfter(start, clk.Now(), period), true, false)
		select {
		case <-ctx.Done():
			p.Park(time.Time{}, false, false)
			return
		case <-t.C():
			p.Park(time.Time{}, false, false)
		}
	}
}
