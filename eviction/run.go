package eviction

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Notifier tells the Manager that pressure may have changed so that it
// passes at once instead of at the next tick. Run blocks until ctx is
// done, calling notify (which never blocks and coalesces) whenever it
// suspects a threshold was crossed; it returns nil on cancellation. A
// notifier that cannot work on this host should log why and degrade (for
// example to polling) rather than fail Run.
type Notifier interface {
	Run(ctx context.Context, notify func()) error
}

// NotifierFunc adapts a function to Notifier.
type NotifierFunc func(ctx context.Context, notify func()) error

// Run calls f.
func (f NotifierFunc) Run(ctx context.Context, notify func()) error { return f(ctx, notify) }

// Trigger asks Run for an immediate pass. It never blocks: triggers that
// arrive while a pass is pending are coalesced. Safe for concurrent use.
func (m *Manager) Trigger() {
	m.parked.Wake()
	select {
	case m.trigger <- struct{}{}:
	default:
	}
}

// Run passes every MonitoringInterval and on every Trigger (or notifier
// call) until ctx is done, then stops its notifiers and returns nil.
// After an eviction it waits for PodCleanedUp (if set) and passes again
// at once. Errors of a pass are logged and do not stop the loop.
func (m *Manager) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	logger.Info("Eviction manager: starting control loop", "thresholds", len(m.cfg.Thresholds))
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, n := range m.cfg.Notifiers {
		wg.Go(func() {
			if err := n.Run(ctx, m.Trigger); err != nil && ctx.Err() == nil {
				logger.Error(err, "Eviction manager: notifier stopped; relying on periodic passes")
			}
		})
	}
	for {
		res, err := m.Synchronize(ctx)
		if err != nil {
			logger.Error(err, "Eviction manager: pass failed")
		}
		if res.Evicted != nil && m.cfg.PodCleanedUp != nil {
			if !m.waitForCleanup(ctx, res.Evicted) {
				return nil
			}
			continue
		}
		if !m.waitForNextPass(ctx) {
			return nil
		}
	}
}

// waitForNextPass waits for the interval or a trigger; false when ctx is
// done.
func (m *Manager) waitForNextPass(ctx context.Context) bool {
	t := m.cfg.Clock.NewTimer(m.cfg.MonitoringInterval)
	defer t.Stop()
	m.parked.Park(m.cfg.Clock.Now().Add(m.cfg.MonitoringInterval), false, false)
	select {
	case <-ctx.Done():
		m.parked.Park(time.Time{}, false, false)
		return false
	case <-t.C():
		m.parked.Park(time.Time{}, false, false)
	case <-m.trigger:
		m.parked.Park(time.Time{}, false, true)
	}
	return true
}

// waitForCleanup polls PodCleanedUp until it is true or the timeout
// expires; false when ctx is done.
func (m *Manager) waitForCleanup(ctx context.Context, pod *v1.Pod) bool {
	logger := klog.FromContext(ctx)
	timeout := m.cfg.Clock.NewTimer(m.cfg.PodCleanupTimeout)
	defer timeout.Stop()
	// A re-armed timer rather than a ticker: a stopped timer leaves no
	// waiter behind on a fake clock (a fake ticker's Stop does nothing).
	poll := m.cfg.Clock.NewTimer(m.cfg.PodCleanupPollInterval)
	defer poll.Stop()
	for !m.cfg.PodCleanedUp(pod) {
		select {
		case <-ctx.Done():
			return false
		case <-timeout.C():
			logger.Info("Eviction manager: timed out waiting for pod to be cleaned up", "pod", klog.KObj(pod))
			return true
		case <-poll.C():
			poll.Reset(m.cfg.PodCleanupPollInterval)
		}
	}
	logger.Info("Eviction manager: pod successfully cleaned up", "pod", klog.KObj(pod))
	return true
}

// NextWake tells when Run's next periodic pass is due, on Config.Clock,
// while Run waits for it (or for a trigger); ok is false while a pass or a
// wait for an evicted pod's cleanup is in progress, while a Trigger is not
// yet taken, or when Run is not running. A test on a fake clock waits until
// ok before stepping the clock to next.
//
// A next not after the clock's now means the timer has fired and Run is
// about to wake: not parked yet, ask again. Package clockdrive steps a fake
// clock over these methods.
func (m *Manager) NextWake() (next time.Time, ok bool) { return m.parked.Next() }
