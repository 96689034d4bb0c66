package clockdrive_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/clockdrive"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ticker is a block that wakes every period on clk and counts its passes.
type ticker struct {
	clk    *testingclock.FakeClock
	period time.Duration
	passes atomic.Int32
	mu     sync.Mutex
	next   time.Time
	armed  bool
}

func (b *ticker) run(ctx context.Context) {
	for {
		b.mu.Lock()
		b.next, b.armed = b.clk.Now().Add(b.period), true
		timer := b.clk.NewTimer(b.period)
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
		b.mu.Lock()
		b.armed = false
		b.mu.Unlock()
		b.passes.Add(1)
	}
}

func (b *ticker) nextDue() (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.next, b.armed
}

func TestStepUntilDrivesEveryBlock(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := testingclock.NewFakeClock(t0)
	fast := &ticker{clk: clk, period: time.Second}
	slow := &ticker{clk: clk, period: 10 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { fast.run(ctx) })
	wg.Go(func() { slow.run(ctx) })
	defer wg.Wait()
	defer cancel()

	var active atomic.Int32
	d, err := clockdrive.New(clk, map[string]clockdrive.Waker{
		"fast": clockdrive.NextFunc(fast.nextDue), "slow": clockdrive.NextFunc(slow.nextDue),
		"workers": clockdrive.Idle(func() int { return int(active.Load()) }),
	})
	require.NoError(t, err)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	steps, err := d.StepUntil(wctx, t0.Add(30*time.Second))
	require.NoError(t, err)
	require.Len(t, steps, 30)
	for _, s := range steps {
		require.Equal(t, time.Second, s)
	}
	require.Equal(t, int32(30), fast.passes.Load())
	require.Equal(t, int32(3), slow.passes.Load())
	require.Equal(t, t0.Add(30*time.Second), clk.Now())
}

func TestParkedNamesBusyBlocks(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	d, err := clockdrive.New(clk, map[string]clockdrive.Waker{
		"busy":   clockdrive.NextFunc(func() (time.Time, bool) { return time.Time{}, false }),
		"due":    clockdrive.NextFunc(func() (time.Time, bool) { return t0, true }), // fired, not woken
		"parked": clockdrive.NextFunc(func() (time.Time, bool) { return t0.Add(time.Second), true }),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = d.Parked(ctx)
	require.ErrorIs(t, err, clockdrive.ErrNotParked)
	require.ErrorContains(t, err, "busy: busy; due: due 0s ago, not woken")
	require.NotContains(t, err.Error(), "parked:", "a parked block is not listed")
}

func TestStepWithNothingDue(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	d, err := clockdrive.New(clk, map[string]clockdrive.Waker{"idle": clockdrive.Idle(func() int { return 0 })})
	require.NoError(t, err)
	step, err := d.Step(context.Background())
	require.NoError(t, err)
	require.Zero(t, step)
	steps, err := d.StepUntil(context.Background(), t0.Add(time.Hour))
	require.NoError(t, err)
	require.Empty(t, steps)
	require.Equal(t, t0, clk.Now(), "the clock stops only where a block wakes")
}

func TestNewValidates(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	for name, tc := range map[string]struct {
		clk    *testingclock.FakeClock
		blocks map[string]clockdrive.Waker
		want   string
	}{
		"no clock":  {nil, map[string]clockdrive.Waker{"a": clockdrive.Idle(func() int { return 0 })}, "clock is required"},
		"no blocks": {clk, nil, "no blocks"},
		"nil block": {clk, map[string]clockdrive.Waker{"a": nil}, `block "a"`},
		"nil func":  {clk, map[string]clockdrive.Waker{"a": clockdrive.NextFunc(nil)}, `block "a"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := clockdrive.New(tc.clk, tc.blocks)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
