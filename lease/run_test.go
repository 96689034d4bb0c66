package lease_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/nodekit/nodekit/lease"
)

// runController starts Run and returns a stop func that cancels it and
// checks it returned nil.
func runController(t *testing.T, c *lease.Controller) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return within 5s of cancel")
		}
	}
}

func TestRunRenewsOnSchedule(t *testing.T) {
	defer goleak.VerifyNone(t)
	c, client, clk := newController(t, nil)
	_, idle := c.NextWake()
	require.False(t, idle, "not running")
	stop := runController(t, c)
	defer stop()

	require.Eventually(t, func() bool { return client.Lease(ns, "node-a") != nil }, 5*time.Second, time.Millisecond)
	for i := 1; i <= 5; i++ {
		// Wait for Run to be parked on its timer and nothing else (the
		// previous request's timeout released), then fire it.
		var next time.Time
		require.Eventually(t, func() bool {
			var idle bool
			next, idle = c.NextWake()
			return idle && next.After(clk.Now())
		}, 5*time.Second, time.Millisecond)
		due, _ := c.NextRenewal("node-a")
		require.Equal(t, clk.Now().Add(10*time.Second), next)
		require.Equal(t, due, next)
		clk.Step(next.Sub(clk.Now()))
		require.Eventually(t, func() bool { return client.Calls("update") == i }, 5*time.Second, time.Millisecond)
		require.True(t, client.Lease(ns, "node-a").Spec.RenewTime.Time.Equal(clk.Now()))
	}
	require.Equal(t, 1, client.Calls("get"))
}

func TestRunManyNamesSpreadAndRuntimeChanges(t *testing.T) {
	defer goleak.VerifyNone(t)
	names := make([]string, 200)
	for i := range names {
		names[i] = fmt.Sprintf("vnode-%03d", i)
	}
	c, client, clk := newController(t, func(cfg *lease.Config) {
		cfg.NodeName = ""
		cfg.Names = names
		cfg.InitialSpread = 10 * time.Second
		cfg.Workers = 4
	})
	stop := runController(t, c)
	defer stop()

	created := func() int {
		n := 0
		for _, name := range c.Names() {
			if client.Lease(ns, name) != nil {
				n++
			}
		}
		return n
	}
	// Renewals are spread over the interval: after half of it, about half
	// the leases exist.
	for range 50 {
		require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
		clk.Step(100 * time.Millisecond)
	}
	require.Eventually(t, func() bool { n := created(); return n > 60 && n < 140 }, 5*time.Second, time.Millisecond, "created=%d", created())
	for range 51 {
		require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
		clk.Step(100 * time.Millisecond)
	}
	require.Eventually(t, func() bool { return created() == len(names) }, 5*time.Second, time.Millisecond)

	// Adding a name at run time renews it at once; removing one stops it.
	require.NoError(t, c.Add("late-node"))
	require.Eventually(t, func() bool { return client.Lease(ns, "late-node") != nil }, 5*time.Second, time.Millisecond)
	c.Remove("vnode-000")
	before := client.Lease(ns, "vnode-000").Spec.RenewTime.Time
	for range 25 {
		require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
		clk.Step(time.Second)
	}
	require.Eventually(t, func() bool {
		return client.Lease(ns, "vnode-199").Spec.RenewTime.Time.After(t0.Add(15 * time.Second))
	}, 5*time.Second, time.Millisecond, "now=%v renew=%v updates=%d", clk.Now().Sub(t0), client.Lease(ns, "vnode-199").Spec.RenewTime.Time.Sub(t0), client.Calls("update"))
	require.True(t, client.Lease(ns, "vnode-000").Spec.RenewTime.Time.Equal(before), "removed name is not renewed")
	require.Len(t, c.Names(), len(names))
}

func TestRunReturnsPromptlyWhileRenewalHangs(t *testing.T) {
	defer goleak.VerifyNone(t)
	c, client, _ := newController(t, nil)
	entered := make(chan struct{}, 1)
	client.SetHook(func(ctx context.Context, _, _, _ string) error {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return ctx.Err()
	})
	stop := runController(t, c)
	<-entered
	stop()
}

func TestRunBatchWindowRenewsEarlyNeverLate(t *testing.T) {
	defer goleak.VerifyNone(t)
	const window = 2 * time.Second
	names := make([]string, 40)
	for i := range names {
		names[i] = fmt.Sprintf("vnode-%02d", i)
	}
	c, client, clk := newController(t, func(cfg *lease.Config) {
		cfg.NodeName = ""
		cfg.Names = names
		cfg.InitialSpread = 10 * time.Second
		cfg.BatchWindow = window
		cfg.Workers = 3 // a batch larger than the workers is still one batch
		cfg.RenewJitter = -1
	})
	stop := runController(t, c)
	defer stop()

	idle := func() time.Time {
		var next time.Time
		require.Eventually(t, func() bool {
			var ok bool
			next, ok = c.NextWake()
			return ok && next.After(clk.Now())
		}, 5*time.Second, time.Millisecond)
		return next
	}
	// Each wake-up renews the leases due by the end of the window it
	// opens, none later than due, and leaves the rest for later: the 40
	// spread names take about five wake-ups per renew interval, not 40.
	wakes := 0
	for clk.Now().Sub(t0) < 30*time.Second {
		next := idle()
		due := map[string]time.Time{}
		for _, name := range names {
			due[name], _ = c.NextRenewal(name)
			require.False(t, due[name].Before(next), "%s due at %v, before the wake-up at %v", name, due[name].Sub(t0), next.Sub(t0))
		}
		clk.Step(next.Sub(clk.Now()))
		wakes++
		idle()
		for _, name := range names {
			l := client.Lease(ns, name)
			renewed := l != nil && l.Spec.RenewTime.Time.Equal(next)
			require.Equal(t, !due[name].After(next.Add(window)), renewed,
				"%s due at %v, wake-up at %v", name, due[name].Sub(t0), next.Sub(t0))
		}
	}
	require.LessOrEqual(t, wakes, 3*5+1, "wake-ups in 30s")
}

func TestLagIsTheMostOverdueRenewal(t *testing.T) {
	c, _, clk := newController(t, func(cfg *lease.Config) {
		cfg.NodeName = ""
		cfg.Names = []string{"a", "b"}
		cfg.InitialSpread = 10 * time.Second
	})
	a, _ := c.NextRenewal("a")
	b, _ := c.NextRenewal("b")
	require.Zero(t, c.Lag(), "nothing due before the clock's now")
	clk.Step(11 * time.Second) // past the spread: both are overdue
	first := a
	if b.Before(a) {
		first = b
	}
	require.Equal(t, clk.Since(first), c.Lag())
	require.NoError(t, c.Renew(context.Background(), "a"))
	require.NoError(t, c.Renew(context.Background(), "b"))
	require.Zero(t, c.Lag(), "both renewed")
}
