package crisim

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc/status"
	"k8s.io/utils/clock"
)

// stopper cancels a pending timer.
type stopper interface {
	Stop() bool
}

// afterFunc runs f in its own goroutine once d has elapsed on the injected
// clock. It never calls f from inside the clock: FakeClock runs AfterFunc
// callbacks while holding its own lock, so f (which locks s.mu and reads the
// clock) must run elsewhere to avoid a lock-order inversion.
func (s *Sim) afterFunc(d time.Duration, f func()) stopper {
	if dc, ok := s.clock.(clock.WithDelayedExecution); ok {
		return dc.AfterFunc(d, func() { go f() })
	}
	t := &timerFunc{t: s.clock.NewTimer(d), stop: make(chan struct{})}
	go t.wait(f)
	return t
}

// timerFunc emulates AfterFunc on clocks that only offer NewTimer.
type timerFunc struct {
	t    clock.Timer
	stop chan struct{}
	once sync.Once
}

func (t *timerFunc) wait(f func()) {
	select {
	case <-t.t.C():
		f()
	case <-t.stop:
	}
}

// Stop cancels the timer; it reports whether f was still pending.
func (t *timerFunc) Stop() bool {
	pending := t.t.Stop()
	t.once.Do(func() { close(t.stop) })
	return pending
}

// sleep waits d on the injected clock or until ctx is done, in which case it
// returns the gRPC status matching ctx's error.
func (s *Sim) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}
