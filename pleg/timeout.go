package pleg

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// withTimeout is context.WithTimeout on the injected clock: the returned
// context ends d after the call on c, or when parent ends.
func withTimeout(parent context.Context, c clock.WithTicker, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	expire := func() { cancel(context.DeadlineExceeded) }
	if dc, ok := c.(clock.WithDelayedExecution); ok {
		t := dc.AfterFunc(d, expire)
		return ctx, func() {
			t.Stop()
			cancel(context.Canceled)
		}
	}
	t := c.NewTimer(d)
	done := make(chan struct{})
	go func() {
		select {
		case <-t.C():
			expire()
		case <-done:
		}
	}()
	return ctx, func() {
		t.Stop()
		close(done)
		cancel(context.Canceled)
	}
}
