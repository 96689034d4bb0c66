package nodestatus

import (
	"context"
	"errors"
	"time"

	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/internal/retry"
)

// Registration backoff of the kubelet: 100ms doubling to 7s.
const (
	registerBackoffInitial = 100 * time.Millisecond
	registerBackoffMax     = 7 * time.Second
)

// Run registers the Node and reports its status until ctx is done; it
// returns nil then. Until the Node has been reported Ready once it syncs
// every FastUpdateInterval (for at most NodeReadyGracePeriod) so a new node
// turns Ready as soon as its setters say so; afterwards every
// UpdateFrequency, or at once after Trigger. Failed registrations back off
// from 100ms to 7s; failed updates retry at the next period, also on the
// fast path (an unreachable API server is not asked ten times a second).
// All waiting is on Config.Clock, and Run leaves no goroutine behind.
func (c *Controller) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	start := c.cfg.Clock.Now()
	backoff := registerBackoffInitial
	reportedReady := false
	for {
		res, err := c.Sync(ctx)
		reportedReady = reportedReady || res.Ready
		next := c.cfg.UpdateFrequency
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && !errors.Is(err, ErrSetters) && !c.isRegistered():
			logger.Error(err, "Unable to register node with API server", "node", c.cfg.NodeName, "retryIn", backoff)
			next, backoff = backoff, retry.Next(backoff, registerBackoffInitial, registerBackoffMax)
		case err != nil:
			logger.Error(err, "Unable to update node status", "node", c.cfg.NodeName)
			backoff = registerBackoffInitial
		default:
			backoff = registerBackoffInitial
		}
		if (err == nil || errors.Is(err, ErrSetters)) && c.isRegistered() && !reportedReady && c.cfg.Clock.Since(start) < c.cfg.NodeReadyGracePeriod {
			next = min(next, c.cfg.FastUpdateInterval)
		}
		if !c.wait(ctx, next) {
			return nil
		}
	}
}

func (c *Controller) isRegistered() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.registered || c.cfg.DisableRegistration
}

// NextWake tells when Run will sync next, on Config.Clock, while it waits
// for that moment; ok is false while a sync is in progress, while a Trigger
// is not yet taken, or when Run is not running. A test on a fake clock
// waits until ok before stepping the clock: the fake clock also holds the
// timeouts of requests in flight, so "the clock has waiters" does not mean
// Run waits.
//
// A next not after the clock's now means the timer has fired and Run is
// about to wake: not parked yet, ask again. Package clockdrive steps a fake
// clock over these methods.
func (c *Controller) NextWake() (next time.Time, ok bool) { return c.parked.Next() }

// wait returns false if ctx ended, true after d or a Trigger.
func (c *Controller) wait(ctx context.Context, d time.Duration) bool {
	t := c.cfg.Clock.NewTimer(d)
	defer t.Stop()
	c.parked.Park(c.cfg.Clock.Now().Add(d), false, false)
	select {
	case <-ctx.Done():
		c.parked.Park(time.Time{}, false, false)
		return false
	case <-t.C():
		c.parked.Park(time.Time{}, false, false)
		return true
	case <-c.trigger:
		c.parked.Park(time.Time{}, false, true)
		return true
	}
}
