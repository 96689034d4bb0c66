// Package clockctx bounds contexts by durations measured on an injected
// clock, so request timeouts expire when a fake clock is stepped.
package clockctx

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// WithTimeout is context.WithTimeout on c: the returned context ends d
// after the call, or when parent ends. Unlike context.WithTimeout's, its
// Err on expiry is context.Canceled: read context.Cause, which is
// context.DeadlineExceeded.
// With a clock that has AfterFunc no goroutine is used.
func WithTimeout(parent context.Context, c clock.WithTicker, d time.Duration) (context.Context, context.CancelFunc) {
	return WithTimeoutCause(parent, c, d, context.DeadlineExceeded)
}

// WithTimeoutCause is WithTimeout with the given cause on expiry, so callers
// can tell their own timeout (context.Cause) from the parent's end.
func WithTimeoutCause(parent context.Context, c clock.WithTicker, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	expire := func() { cancel(cause) }
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
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			t.Stop()
			close(done)
		})
		cancel(context.Canceled)
	}
}
