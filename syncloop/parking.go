package syncloop

import (
	"sync"
	"time"
)

// parking is what a Run loop tells its Next… accessor: when it is parked
// until (zero: not parked), whether a wake-up is pending (woken) and whether
// it listens to wake-ups at all while parked (deaf: it does not).
type parking struct {
	mu          sync.Mutex
	until       time.Time
	woken, deaf bool
}

// park records that the loop waits until t (zero: it does not wait), deaf
// to wake-ups or not; taken clears the wake-up the loop just took.
func (p *parking) park(t time.Time, deaf, taken bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if taken {
		p.woken = false
	}
	p.until, p.deaf = t, deaf
}

// wake records a wake-up the loop has not taken yet.
func (p *parking) wake() {
	p.mu.Lock()
	p.woken = true
	p.mu.Unlock()
}

// next is the accessor: the time the parked loop waits for, and false while
// it is not parked or a wake-up it listens to is pending.
func (p *parking) next() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.until.IsZero() || (p.woken && !p.deaf) {
		return time.Time{}, false
	}
	return p.until, true
}

// tickAfter returns the first tick of a ticker of period that started at
// start, strictly after now: when a fake clock's ticker fires next.
func tickAfter(start, now time.Time, period time.Duration) time.Time {
	if !now.Before(start) {
		start = start.Add((now.Sub(start)/period + 1) * period)
	}
	return start
}
