package podworkerstest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/internal/broadcast"
	"github.com/nodekit/nodekit/podworkers"
)

var _ podworkers.StatusBarrier = (*Barrier)(nil).Wait

// BarrierCall is one recorded StatusBarrier call.
type BarrierCall struct {
	// UID is the pod waited for.
	UID types.UID
	// After is the time the status had to be newer than: the end of the
	// pod's previous sync, zero before the first.
	After time.Time
}

// Barrier is a fake status barrier: pass its Wait method as
// podworkers.Config.StatusBarrier. Wait returns at once unless the pod is
// held (Hold), in which case it waits for Release or its ctx.
//
// The zero value is ready to use. All methods are safe for concurrent use.
type Barrier struct {
	mu      sync.Mutex
	calls   []BarrierCall
	held    int
	holds   map[types.UID]*gate
	errs    map[types.UID]error
	changed broadcast.Signal
}

// Wait has the podworkers.StatusBarrier signature. It records the call;
// while uid is held it waits until Release(uid) or ctx is done (then it
// returns an error wrapping ctx.Err()); then it returns the error set with
// SetError for uid, nil by default.
func (b *Barrier) Wait(ctx context.Context, uid types.UID, after time.Time) error {
	b.mu.Lock()
	b.calls = append(b.calls, BarrierCall{UID: uid, After: after})
	g := b.holds[uid]
	if g != nil {
		b.held++
	}
	b.changed.Fire()
	b.mu.Unlock()
	if g != nil {
		defer func() {
			b.mu.Lock()
			b.held--
			b.changed.Fire()
			b.mu.Unlock()
		}()
		select {
		case <-g.ch:
		case <-ctx.Done():
			return fmt.Errorf("podworkerstest: held status of pod %s: %w", uid, ctx.Err())
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.errs[uid]
}

// Hold makes calls for uid wait until Release(uid), like a runtime cache
// that has no fresh status for the pod yet. Holding a held pod does
// nothing.
func (b *Barrier) Hold(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.holds[uid] != nil {
		return
	}
	if b.holds == nil {
		b.holds = map[types.UID]*gate{}
	}
	b.holds[uid] = newGate()
}

// Release lets the calls held for uid proceed, and later calls return at
// once. Releasing a pod that is not held does nothing.
func (b *Barrier) Release(uid types.UID) {
	b.mu.Lock()
	g := b.holds[uid]
	delete(b.holds, uid)
	b.mu.Unlock()
	if g != nil {
		g.open()
	}
}

// SetError makes later calls for uid return err, which fails the sync
// (the workers retry it after the backoff); nil restores success.
func (b *Barrier) SetError(uid types.UID, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		delete(b.errs, uid)
		return
	}
	if b.errs == nil {
		b.errs = map[types.UID]error{}
	}
	b.errs[uid] = err
}

// Calls returns a copy of the recorded calls, in the order they started.
func (b *Barrier) Calls() []BarrierCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.calls)
}

// Held returns how many calls are waiting for a Release.
func (b *Barrier) Held() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// WaitHeld waits until at least n calls are waiting for a Release. It
// returns an error wrapping ctx.Err() if ctx is done first.
func (b *Barrier) WaitHeld(ctx context.Context, n int) error {
	for {
		b.mu.Lock()
		have := b.held
		ch := b.changed.Wait()
		b.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("podworkerstest: waiting for %d held calls, have %d: %w", n, have, ctx.Err())
		}
	}
}
