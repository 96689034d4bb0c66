package syncloop

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Run starts every configured source and runs the loop until ctx is done:
// it calls Iterate whenever input arrives or timed work is due, and while
// the runtime is unhealthy only when the backoff expires (input keeps being
// queued meanwhile, so no producer blocks). It returns nil once ctx is done
// and every source has returned, or, after stopping everything, the first
// error a source returned before ctx was done.
func (l *Loop) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting sync loop", "sources", l.sources)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for _, s := range l.cfg.Sources {
		name := s.Name()
		set := func(ctx context.Context, pods []*v1.Pod) { l.Set(ctx, name, pods) }
		sctx := klog.NewContext(ctx, klog.LoggerWithValues(logger, "source", name))
		wg.Go(func() {
			if err := s.Run(sctx, set); err != nil && ctx.Err() == nil {
				errOnce.Do(func() { firstErr = fmt.Errorf("syncloop: source %q: %w", name, err) })
				cancel()
			}
		})
	}
	defer wg.Wait()

	for {
		wait := l.Iterate(ctx)
		notify := l.in.notify
		if l.Unhealthy() {
			notify = nil // input keeps queueing; check health after the backoff
		}
		t := l.cfg.Clock.NewTimer(wait)
		l.in.parked.Park(l.cfg.Clock.Now().Add(wait), notify == nil, false)
		select {
		case <-ctx.Done():
			l.in.parked.Park(time.Time{}, false, false)
			t.Stop()
			cancel()
			wg.Wait()
			return firstErr
		case <-notify:
			l.in.parked.Park(time.Time{}, false, true)
		case <-t.C():
			l.in.parked.Park(time.Time{}, false, false)
		}
		t.Stop()
	}
}

// NextWake tells when Run next iterates by itself (the sync tick,
// housekeeping, or the health backoff), on Config.Clock, while Run is
// parked; ok is false while an iteration runs, while input (a snapshot, a
// PLEG event, a probe result) waits to be taken, or when Run is not
// running. While the runtime is unhealthy Run does not listen to input, so
// queued input does not clear ok. A test on a fake clock waits until ok
// before stepping the clock to next. The sources' own timers (file and
// HTTP polling, the API server's reflector) are not included.
//
// A next not after the clock's now means the timer has fired and Run is
// about to wake: not parked yet, ask again. Package clockdrive steps a fake
// clock over these methods.
func (l *Loop) NextWake() (next time.Time, ok bool) { return l.in.parked.Next() }
