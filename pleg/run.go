package pleg

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Run relists at once, then every RelistPeriod (EventedRelistPeriod while
// an evented stream is connected), serves RequestRelist, delivers coalesced
// PodSyncs as the consumer makes room and, in evented mode, keeps the
// runtime event stream connected. It blocks until ctx is done, then returns
// nil once every goroutine it started has ended. Relist errors are logged
// and surface through Healthy. Run may be called once at a time.
func (g *Generator) Run(ctx context.Context) error {
	if !g.running.CompareAndSwap(false, true) {
		return errAlreadyRunning
	}
	defer g.running.Store(false)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { g.em.deliver(ctx) })
	if g.cfg.Evented {
		wg.Go(func() { g.stream(ctx) })
	}
	g.loop(ctx)
	cancel()
	wg.Wait()
	return nil
}

func (g *Generator) loop(ctx context.Context) {
	g.relistLogged(ctx)
	d := g.period()
	timer := g.clock.NewTimer(d)
	defer timer.Stop()
	due := g.clock.Now().Add(d)
	for {
		g.parked.Park(due, false, false)
		select {
		case <-ctx.Done():
			g.parked.Park(time.Time{}, false, false)
			return
		case <-timer.C():
			g.parked.Park(time.Time{}, false, false)
			g.relistLogged(ctx)
			d = g.period()
			timer.Reset(d)
			due = g.clock.Now().Add(d)
		case <-g.reqWake:
			g.parked.Park(time.Time{}, false, true)
			full, pods := g.takeRequests()
			if full {
				g.relistLogged(ctx)
				d = g.period()
				resetTimer(timer, d)
				due = g.clock.Now().Add(d)
			}
			g.relistPods(ctx, pods)
		}
	}
}

// NextWake tells when Run's next periodic relist is due, on the
// Generator's clock, while Run waits for it (or for a request); ok is false
// while a relist is in progress, while a relist request (RequestRelist,
// RequestReinspect, a runtime event) is not yet taken, or when Run is not
// running. A test on a fake
// clock waits until ok before stepping the clock to the returned time: the
// fake clock also holds the timeouts of runtime calls in flight, so "the
// clock has waiters" does not mean Run waits.
//
// A next not after the clock's now means the timer has fired and Run is
// about to wake: not parked yet, ask again. Package clockdrive steps a fake
// clock over these methods.
func (g *Generator) NextWake() (next time.Time, ok bool) { return g.parked.Next() }

// relistPods serves single-pod relist requests a full relist has not
// already covered.
func (g *Generator) relistPods(ctx context.Context, pods map[types.UID]time.Time) {
	if len(pods) == 0 {
		return
	}
	last := g.lastRelistTime()
	for uid, at := range pods {
		if ctx.Err() != nil {
			return
		}
		if last.After(at) {
			continue
		}
		if _, err := g.RelistPod(ctx, uid); err != nil {
			klog.FromContext(ctx).Error(err, "Single-pod relist failed; the next relist covers it", "podUID", uid)
		}
	}
}

func (g *Generator) relistLogged(ctx context.Context) {
	if _, err := g.Relist(ctx); err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Error(err, "Relist failed")
	}
}

// period is the current full relist period.
func (g *Generator) period() time.Duration {
	if g.cfg.Evented && g.streamUp.Load() {
		return g.cfg.EventedRelistPeriod
	}
	return g.cfg.RelistPeriod
}

// resetTimer stops t, drains a pending tick, and restarts it with d.
func resetTimer(t clock.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C():
		default:
		}
	}
	t.Reset(d)
}
