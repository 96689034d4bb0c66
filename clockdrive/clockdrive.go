package clockdrive

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// Waker is a block with a Run loop that tells when it next wakes on the
// clock and whether it is waiting for it (see the package doc for what
// each answer means). The nodekit blocks with a Run loop on the injected
// clock implement it (the package doc lists them).
type Waker interface {
	NextWake() (next time.Time, ok bool)
}

// NextFunc is a Waker of a function.
type NextFunc func() (time.Time, bool)

// NextWake calls f.
func (f NextFunc) NextWake() (time.Time, bool) { return f() }

// Idle makes a NextFunc of a count of work in flight that does not wait
// for the clock (podworkers.Workers.Active): parked with nothing due when
// the count is zero.
func Idle(active func() int) NextFunc {
	return func() (time.Time, bool) { return time.Time{}, active() == 0 }
}

// ErrNotParked is returned (wrapped, naming the blocks) when the context
// ends before every block parked.
var ErrNotParked = errors.New("clockdrive: not every block parked")

// Driver steps a fake clock to the earliest time its blocks wait for,
// once all of them wait.
type Driver struct {
	clock  *testingclock.FakeClock
	blocks map[string]Waker
}

// New returns a Driver over clock and the blocks, by name (the names
// appear in errors).
func New(clock *testingclock.FakeClock, blocks map[string]Waker) (*Driver, error) {
	if clock == nil {
		return nil, errors.New("clockdrive: a clock is required")
	}
	if len(blocks) == 0 {
		return nil, errors.New("clockdrive: no blocks to drive")
	}
	for name, b := range blocks {
		if f, isFunc := b.(NextFunc); b == nil || isFunc && f == nil {
			return nil, fmt.Errorf("clockdrive: block %q is nil", name)
		}
	}
	return &Driver{clock: clock, blocks: blocks}, nil
}

// Parked waits until every block is parked (ok, and waiting for a time
// after now or for nothing) and returns the earliest time one waits for;
// zero when none waits for a time. It yields the processor between polls
// and returns ErrNotParked, with each block's last answer, when ctx ends.
func (d *Driver) Parked(ctx context.Context) (time.Time, error) {
	for {
		earliest, waiting, state := d.poll()
		if waiting {
			return earliest, nil
		}
		if ctx.Err() != nil {
			return time.Time{}, fmt.Errorf("%w at %s: %s", ErrNotParked, d.clock.Now().Format(time.RFC3339Nano), state)
		}
		runtime.Gosched()
	}
}

// poll asks every block once.
func (d *Driver) poll() (earliest time.Time, waiting bool, state string) {
	now := d.clock.Now()
	waiting = true
	var busy []string
	for name, b := range d.blocks {
		at, ok := b.NextWake()
		switch {
		case !ok:
			busy = append(busy, name+": busy")
			waiting = false
			continue
		case !at.IsZero() && !at.After(now):
			busy = append(busy, fmt.Sprintf("%s: due %s ago, not woken", name, now.Sub(at)))
			waiting = false
		}
		if !at.IsZero() && (earliest.IsZero() || at.Before(earliest)) {
			earliest = at
		}
	}
	sort.Strings(busy)
	return earliest, waiting, strings.Join(busy, "; ")
}

// Step waits until every block is parked, then steps the clock to the
// earliest time one waits for, and returns how far it stepped. With no
// block waiting for a time it does not step and returns 0.
func (d *Driver) Step(ctx context.Context) (time.Duration, error) {
	at, err := d.Parked(ctx)
	if err != nil || at.IsZero() {
		return 0, err
	}
	step := at.Sub(d.clock.Now())
	d.clock.Step(step)
	return step, nil
}

// StepUntil steps until the clock reaches until (or no block waits for a
// time), then waits until every block is parked again. It returns the
// steps taken; the last one may pass until, as the clock only ever stops
// where a block wakes.
func (d *Driver) StepUntil(ctx context.Context, until time.Time) ([]time.Duration, error) {
	var steps []time.Duration
	for d.clock.Now().Before(until) {
		step, err := d.Step(ctx)
		if err != nil {
			return steps, err
		}
		if step == 0 {
			break
		}
		steps = append(steps, step)
	}
	_, err := d.Parked(ctx)
	return steps, err
}
