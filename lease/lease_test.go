package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/lease"
	"github.com/nodekit/nodekit/lease/leasetest"
)

const ns = lease.DefaultNamespace

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newController(t *testing.T, mutate func(*lease.Config)) (*lease.Controller, *leasetest.Client, *clocktesting.FakeClock) {
	t.Helper()
	client := leasetest.New()
	clk := clocktesting.NewFakeClock(t0)
	cfg := lease.Config{Client: client, NodeName: "node-a", Clock: clk, Rand: func() float64 { return 0 }}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := lease.New(cfg)
	require.NoError(t, err)
	return c, client, clk
}

func TestNewValidation(t *testing.T) {
	client := leasetest.New()
	tests := []struct {
		name string
		cfg  lease.Config
		want string
	}{
		{"no client", lease.Config{NodeName: "a"}, "Client is required"},
		{"empty name", lease.Config{Client: client, Names: []string{""}}, "empty node name"},
		{"bad name", lease.Config{Client: client, NodeName: "Not_A_Name"}, "node name"},
		{"duplicate", lease.Config{Client: client, NodeName: "a", Names: []string{"a"}}, "given twice"},
		{"negative duration", lease.Config{Client: client, NodeName: "a", LeaseDuration: -time.Second}, "LeaseDuration"},
		{"fractional duration", lease.Config{Client: client, NodeName: "a", LeaseDuration: 1500 * time.Millisecond}, "whole number of seconds"},
		{"renew equals duration", lease.Config{Client: client, NodeName: "a", RenewInterval: 40 * time.Second}, "shorter than LeaseDuration"},
		{"renew above duration", lease.Config{Client: client, NodeName: "a", LeaseDuration: 10 * time.Second, RenewInterval: time.Minute}, "shorter than LeaseDuration"},
		{"negative renew", lease.Config{Client: client, NodeName: "a", RenewInterval: -time.Second}, "RenewInterval"},
		{"bad namespace", lease.Config{Client: client, NodeName: "a", Namespace: "Bad NS"}, "Namespace"},
		{"backoff inverted", lease.Config{Client: client, NodeName: "a", BackoffInitial: 10 * time.Second, BackoffMax: time.Second}, "backoff"},
		{"negative workers", lease.Config{Client: client, NodeName: "a", Workers: -1}, "Workers"},
		{"negative batch window", lease.Config{Client: client, NodeName: "a", BatchWindow: -time.Second}, "BatchWindow"},
		{"batch window of half the interval", lease.Config{Client: client, NodeName: "a", BatchWindow: 5 * time.Second}, "BatchWindow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := lease.New(tt.cfg)
			require.Nil(t, c)
			require.ErrorIs(t, err, lease.ErrInvalidConfig)
			require.ErrorContains(t, err, tt.want)
		})
	}
	c, err := lease.New(lease.Config{Client: client, NodeName: "a"})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, c.Names())
}

func TestRenewCreatesThenUpdatesWithoutGet(t *testing.T) {
	c, client, clk := newController(t, nil)
	ctx := context.Background()

	require.NoError(t, c.Renew(ctx, "node-a"))
	require.Equal(t, 1, client.Calls("get"))
	require.Equal(t, 1, client.Calls("create"))
	l := client.Lease(ns, "node-a")
	require.Equal(t, "node-a", *l.Spec.HolderIdentity)
	require.EqualValues(t, 40, *l.Spec.LeaseDurationSeconds)
	require.True(t, l.Spec.RenewTime.Time.Equal(t0))
	next, ok := c.NextRenewal("node-a")
	require.True(t, ok)
	require.Equal(t, t0.Add(10*time.Second), next)

	client.ResetCalls()
	for i := 1; i <= 3; i++ {
		clk.Step(10 * time.Second)
		require.NoError(t, c.Renew(ctx, "node-a"))
		require.True(t, client.Lease(ns, "node-a").Spec.RenewTime.Time.Equal(clk.Now()))
	}
	require.Equal(t, 3, client.Calls("update"))
	require.Zero(t, client.Calls("get"), "the happy path must not GET")
	require.Zero(t, client.Calls("create"))
}

func TestRenewUnknownName(t *testing.T) {
	c, _, _ := newController(t, nil)
	require.ErrorIs(t, c.Renew(context.Background(), "nope"), lease.ErrUnknownName)
}

func TestRenewConflictRereadsAndRetries(t *testing.T) {
	c, client, _ := newController(t, nil)
	ctx := context.Background()
	require.NoError(t, c.Renew(ctx, "node-a"))

	// Someone else writes the lease: our cached resourceVersion is stale.
	other := client.Lease(ns, "node-a")
	other.Labels = map[string]string{"touched": "yes"}
	client.Put(other)
	client.ResetCalls()

	require.NoError(t, c.Renew(ctx, "node-a"))
	require.Equal(t, 2, client.Calls("update"), "conflict, then success")
	require.Equal(t, 1, client.Calls("get"))
	require.Equal(t, "yes", client.Lease(ns, "node-a").Labels["touched"], "others' fields are kept")
}

func TestRenewRecreatesDeletedLease(t *testing.T) {
	c, client, _ := newController(t, nil)
	ctx := context.Background()
	require.NoError(t, c.Renew(ctx, "node-a"))
	client.Remove(ns, "node-a")
	client.ResetCalls()

	require.NoError(t, c.Renew(ctx, "node-a"))
	require.Equal(t, 1, client.Calls("update"))
	require.Equal(t, 1, client.Calls("get"))
	require.Equal(t, 1, client.Calls("create"))
	require.NotNil(t, client.Lease(ns, "node-a"))
}

func TestRenewConflictEveryTimeExhaustsAttempts(t *testing.T) {
	c, client, _ := newController(t, nil)
	ctx := context.Background()
	require.NoError(t, c.Renew(ctx, "node-a"))
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "leases"}, "node-a", errors.New("x"))
	client.SetHook(func(_ context.Context, verb, _, _ string) error {
		if verb == "update" {
			return conflict
		}
		return nil
	})
	client.ResetCalls()
	err := c.Renew(ctx, "node-a")
	require.ErrorIs(t, err, lease.ErrAttemptsExhausted)
	require.Equal(t, lease.DefaultMaxUpdateAttempts, client.Calls("update"))
}

func TestTakeOverLeaseHeldByAnotherHolder(t *testing.T) {
	c, client, _ := newController(t, nil)
	client.Put(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: ns},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("impostor"), LeaseDurationSeconds: ptr.To[int32](100)},
	})
	require.NoError(t, c.Renew(context.Background(), "node-a"))
	l := client.Lease(ns, "node-a")
	require.Equal(t, "node-a", *l.Spec.HolderIdentity)
	require.EqualValues(t, 40, *l.Spec.LeaseDurationSeconds)
}

// A renewal cut short by the caller's context (the host shutting down)
// is no failure to report: OnRepeatedFailure is not called, however many.
func TestCanceledRenewalsAreNotReported(t *testing.T) {
	var calls atomic.Int32
	c, client, _ := newController(t, func(cfg *lease.Config) {
		cfg.OnRepeatedFailure = func(string, error) { calls.Add(1) }
	})
	ctx, cancel := context.WithCancel(context.Background())
	client.SetHook(func(ctx context.Context, _, _, _ string) error {
		cancel()
		return ctx.Err()
	})
	for range 3 {
		require.ErrorIs(t, c.Renew(ctx, "node-a"), context.Canceled)
	}
	require.Zero(t, calls.Load())
}

// TestBackoffSequence steps the fake clock through a whole backoff sequence
// against a failing server, then checks the controller recovers.
func TestBackoffSequence(t *testing.T) {
	var hookCalls []string
	var mu sync.Mutex
	c, client, clk := newController(t, func(cfg *lease.Config) {
		cfg.OnRepeatedFailure = func(name string, err error) {
			mu.Lock()
			defer mu.Unlock()
			hookCalls = append(hookCalls, name)
		}
	})
	ctx := context.Background()
	failing := apierrors.NewInternalError(errors.New("etcd is down"))
	client.SetHook(func(context.Context, string, string, string) error { return failing })

	want := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond, 7 * time.Second, 7 * time.Second}
	for i, d := range want {
		err := c.Renew(ctx, "node-a")
		require.True(t, apierrors.IsInternalError(err), "attempt %d: %v", i+1, err)
		next, _ := c.NextRenewal("node-a")
		require.Equal(t, d, next.Sub(clk.Now()), "delay after failure %d", i+1)
		mu.Lock()
		require.Len(t, hookCalls, max(0, i), "OnRepeatedFailure from the second consecutive failure on")
		mu.Unlock()
		clk.Step(d)
	}
	require.Equal(t, len(want), client.Calls("get"), "one GET per failed renewal, no immediate retries")

	client.SetHook(nil)
	require.NoError(t, c.Renew(ctx, "node-a"))
	next, _ := c.NextRenewal("node-a")
	require.Equal(t, 10*time.Second, next.Sub(clk.Now()), "success resets the backoff")
}

func TestRequestTimeoutRunsOnInjectedClock(t *testing.T) {
	defer goleak.VerifyNone(t)
	c, client, clk := newController(t, func(cfg *lease.Config) { cfg.RequestTimeout = 3 * time.Second })
	client.SetHook(func(ctx context.Context, _, _, _ string) error {
		<-ctx.Done() // a hung server
		return ctx.Err()
	})
	done := make(chan error, 1)
	go func() { done <- c.Renew(context.Background(), "node-a") }()
	require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("renewal returned before the timeout: %v", err)
	default:
	}
	clk.Step(3 * time.Second)
	require.ErrorIs(t, <-done, context.Canceled)
}

func TestJitterBounds(t *testing.T) {
	for _, r := range []float64{0, 0.5, 0.999999} {
		c, _, clk := newController(t, func(cfg *lease.Config) { cfg.Rand = func() float64 { return r } })
		require.NoError(t, c.Renew(context.Background(), "node-a"))
		next, _ := c.NextRenewal("node-a")
		d := next.Sub(clk.Now())
		require.GreaterOrEqual(t, d, 10*time.Second)
		require.LessOrEqual(t, d, 10400*time.Millisecond)
		require.Equal(t, 10*time.Second+time.Duration(float64(10*time.Second)*0.04*r), d)
	}
}

func TestSpread(t *testing.T) {
	seen := map[time.Duration]bool{}
	for i := range 100 {
		s := lease.Spread(fmt.Sprintf("node-%d", i), 10*time.Second)
		require.GreaterOrEqual(t, s, time.Duration(0))
		require.Less(t, s, 10*time.Second)
		seen[s] = true
	}
	require.Greater(t, len(seen), 90, "spread offsets are distinct")
	require.Equal(t, lease.Spread("x", time.Second), lease.Spread("x", time.Second))
}

func TestOwnerReference(t *testing.T) {
	var lookups int
	var uid types.UID
	c, client, clk := newController(t, func(cfg *lease.Config) {
		cfg.NodeUID = func(_ context.Context, name string) (types.UID, error) {
			lookups++
			if uid == "" {
				return "", apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name)
			}
			return uid, nil
		}
	})
	ctx := context.Background()
	// No Node yet: the lease is renewed anyway, without an owner.
	require.NoError(t, c.Renew(ctx, "node-a"))
	require.Empty(t, client.Lease(ns, "node-a").OwnerReferences)
	require.Equal(t, 1, lookups)
	// Within OwnerLookupInterval no further lookups.
	for range 5 {
		clk.Step(10 * time.Second)
		require.NoError(t, c.Renew(ctx, "node-a"))
	}
	require.Equal(t, 1, lookups)
	// The Node appears; the next lookup (a minute later) finds it.
	uid = "node-uid-1"
	clk.Step(10 * time.Second)
	require.NoError(t, c.Renew(ctx, "node-a"))
	require.Equal(t, 2, lookups)
	refs := client.Lease(ns, "node-a").OwnerReferences
	require.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: "node-uid-1"}}, refs)
	// Once known, never looked up again.
	for range 10 {
		clk.Step(time.Minute)
		require.NoError(t, c.Renew(ctx, "node-a"))
	}
	require.Equal(t, 2, lookups)

	// The Node is recreated: the garbage collector deletes the lease; the
	// controller looks the new UID up before recreating it.
	uid = "node-uid-2"
	client.Remove(ns, "node-a")
	require.NoError(t, c.Renew(ctx, "node-a"))
	require.Equal(t, 3, lookups)
	require.Equal(t, types.UID("node-uid-2"), client.Lease(ns, "node-a").OwnerReferences[0].UID)
}

func TestSetNodeUIDNeedsNoLookup(t *testing.T) {
	c, client, _ := newController(t, nil)
	c.SetNodeUID("node-a", "pushed-uid")
	require.NoError(t, c.Renew(context.Background(), "node-a"))
	require.Equal(t, types.UID("pushed-uid"), client.Lease(ns, "node-a").OwnerReferences[0].UID)
	require.Zero(t, client.Calls("get")+client.Calls("create")-2, "only the initial get+create")
}

func TestForbiddenIsReportedClearly(t *testing.T) {
	c, client, _ := newController(t, nil)
	client.SetHook(func(context.Context, string, string, string) error {
		return apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "node-a", errors.New("not allowed"))
	})
	err := c.Renew(context.Background(), "node-a")
	require.True(t, apierrors.IsForbidden(err))
	require.ErrorContains(t, err, "lease: get kube-node-lease/node-a")
}
