package hosts_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/lease"
	"github.com/nodekit/nodekit/nodestatus"
)

// TestLeaseAndNodeStatus runs both Run loops on one FakeClock for five
// simulated minutes and counts what reaches the API server.
func TestLeaseAndNodeStatus(t *testing.T) {
	defer goleak.VerifyNone(t)
	const node = "node-1"
	clk := clocktesting.NewFakeClock(t0)
	api := newAPIServer(clk)
	health := &healthSwitch{}

	leases, err := lease.New(lease.Config{
		Client:      clientset.Wrap(api),
		NodeName:    node,
		Clock:       clk,
		RenewJitter: -1, // exactly every 10s
	})
	require.NoError(t, err)
	var registeredAt atomic.Int64 // simulated ns after t0, -1 until registered
	registeredAt.Store(-1)
	status, err := nodestatus.New(nodestatus.Config{
		Client:   clientset.Wrap(api),
		NodeName: node,
		Setters:  nodeSetters(t, health.Err),
		Clock:    clk,
		// 2m instead of the default 5m, so that five minutes hold two
		// unforced reports besides the reports of changes.
		ReportFrequency: 2 * time.Minute,
		ReportJitter:    -1, // unforced reports exactly every ReportFrequency
		OnRegistered: func(n *v1.Node) {
			registeredAt.Store(int64(clk.Now().Sub(t0)))
			leases.SetNodeUID(n.Name, n.UID)
		},
	})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &driver{t: t, clk: clk, accessors: []accessor{{"lease", leases.NextWake}}}

	// The lease starts first: its first renewal cannot know the Node yet.
	waitLease := runBlock(t, ctx, "lease", leases.Run)
	d.park()
	require.Len(t, api.requests("create", "leases", ""), 1)
	require.Empty(t, api.requests("create", "leases", "")[0].obj.(*coordinationv1.Lease).OwnerReferences)

	waitStatus := runBlock(t, ctx, "nodestatus", status.Run)
	d.accessors = append(d.accessors, accessor{"nodestatus", status.NextWake})
	d.park()
	require.Equal(t, int64(0), registeredAt.Load(), "registered at once")
	require.Len(t, api.requests("create", "nodes", ""), 1)

	notReady := errors.New("container runtime is down")
	d.runUntil(5*time.Minute,
		action{150 * time.Second, func() { health.Set(notReady); status.Trigger() }},
		action{160 * time.Second, func() { require.Equal(t, v1.ConditionFalse, nodeReady(getNode(t, api, node))) }},
		action{180 * time.Second, func() { health.Set(nil); status.Trigger() }},
	)
	cancel()
	waitLease()
	waitStatus()

	t.Logf("clock steps: %d, polls with an unarmed timer: %d", d.steps, d.unarmed)

	// Lease: created at 0, then one UPDATE every 10s, no GET on the hot path.
	require.Equal(t, []time.Duration{0}, times(api.requests("create", "leases", "")))
	var want []time.Duration
	for s := 10; s <= 300; s += 10 {
		want = append(want, time.Duration(s)*time.Second)
	}
	updates := api.requests("update", "leases", "")
	require.Equal(t, want, times(updates))
	require.Equal(t, 30, api.actions("update", "leases", ""))
	require.Equal(t, 1, api.actions("create", "leases", ""))
	require.Equal(t, 1, api.actions("get", "leases", ""), "only before the create")
	// The owner reference is there from the first renewal after registration.
	for _, u := range updates {
		l := u.obj.(*coordinationv1.Lease)
		require.Len(t, l.OwnerReferences, 1, "lease at %v", u.at)
		require.Equal(t, metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node, UID: "uid-of-" + node}, l.OwnerReferences[0])
	}

	// Node status: registered by the create at 0 (no PATCH right after);
	// then an unforced report at 2m (ReportFrequency after the create), the
	// two Ready flips at 2m30s and 3m (reported at once on Trigger), and
	// the next unforced report at 5m (ReportFrequency after the last). The
	// other status computations (every 10s) changed nothing and sent nothing.
	require.Equal(t, 4, api.actions("patch", "nodes", "status"))
	require.Equal(t, 1, api.actions("create", "nodes", ""))
	require.Zero(t, api.actions("get", "nodes", ""), "no GET: no owner lookup, no status read")
	patches := api.requests("patch", "nodes", "status")
	require.Equal(t, []time.Duration{120 * time.Second, 150 * time.Second, 180 * time.Second, 300 * time.Second}, times(patches))
	require.Equal(t, v1.ConditionTrue, nodeReady(getNode(t, api, node)))
}
