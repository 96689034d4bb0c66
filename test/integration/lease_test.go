package integration

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/lease"
	"github.com/nodekit/nodekit/test/apiserver"
)

func createNode(t *testing.T, cs kubernetes.Interface, name string) *v1.Node {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Create(context.Background(), nodeObj(name), metav1.CreateOptions{})
	require.NoError(t, err)
	return n
}

// TestLeaseAsNodeIdentity drives the lease controller against the real
// apiserver as system:node:<name>, with a fake clock.
func TestLeaseAsNodeIdentity(t *testing.T) {
	ctx := context.Background()
	const name = "lease-node-1"
	nodeClient := srv.NodeClient(name)
	node := createNode(t, nodeClient, name)
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Microsecond))
	ctl, err := lease.New(lease.Config{
		Client:   clientset.Wrap(nodeClient),
		NodeName: name,
		NodeUID:  lease.NodeUIDFromAPI(clientset.Wrap(nodeClient)),
		Clock:    clk,
	})
	require.NoError(t, err)
	leases := srv.AdminClient().CoordinationV1().Leases(apiserver.NodeLeaseNamespace)

	// Created, with the owner reference to the Node.
	require.NoError(t, ctl.Renew(ctx, name))
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, name, *l.Spec.HolderIdentity)
	require.EqualValues(t, 40, *l.Spec.LeaseDurationSeconds)
	require.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: node.UID}}, l.OwnerReferences)

	// Renewed on schedule.
	next, _ := ctl.NextRenewal(name)
	clk.SetTime(next)
	require.NoError(t, ctl.Renew(ctx, name))
	l2, err := leases.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.True(t, l2.Spec.RenewTime.Time.Equal(next.Truncate(time.Microsecond)), "renewTime %v, want %v", l2.Spec.RenewTime.Time, next)
	require.NotEqual(t, l.ResourceVersion, l2.ResourceVersion)

	// Recreated after someone deletes it.
	require.NoError(t, leases.Delete(ctx, name, metav1.DeleteOptions{}))
	clk.Step(10 * time.Second)
	require.NoError(t, ctl.Renew(ctx, name))
	l3, err := leases.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEqual(t, l.UID, l3.UID)
	require.Len(t, l3.OwnerReferences, 1)
}

// TestLeaseNodeRestriction shows the apiserver refusing a node's attempt to
// renew another node's lease, and the controller reporting it.
func TestLeaseNodeRestriction(t *testing.T) {
	createNode(t, srv.AdminClient(), "lease-victim")
	ctl, err := lease.New(lease.Config{
		Client:   clientset.Wrap(srv.NodeClient("lease-intruder")),
		NodeName: "lease-victim",
	})
	require.NoError(t, err)
	err = ctl.Renew(context.Background(), "lease-victim")
	require.True(t, apierrors.IsForbidden(err), "got %v", err)
	require.ErrorContains(t, err, "kube-node-lease/lease-victim")
	require.ErrorContains(t, err, "forbidden")
}

// TestLeaseRunRealTime runs the controller on the real clock with short
// periods and checks renewals arrive on schedule.
func TestLeaseRunRealTime(t *testing.T) {
	const name = "lease-node-rt"
	nodeClient := srv.NodeClient(name)
	createNode(t, nodeClient, name)
	ctl, err := lease.New(lease.Config{
		Client:        clientset.Wrap(nodeClient),
		NodeName:      name,
		LeaseDuration: 2 * time.Second,
		RenewInterval: 200 * time.Millisecond,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()

	leases := srv.AdminClient().CoordinationV1().Leases(apiserver.NodeLeaseNamespace)
	var seen []time.Time
	require.Eventually(t, func() bool {
		l, err := leases.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		if len(seen) == 0 || !l.Spec.RenewTime.Time.Equal(seen[len(seen)-1]) {
			seen = append(seen, l.Spec.RenewTime.Time)
		}
		return len(seen) >= 4
	}, 10*time.Second, 20*time.Millisecond)
	for i := 1; i < len(seen); i++ {
		gap := seen[i].Sub(seen[i-1])
		require.Less(t, gap, 700*time.Millisecond, "renewal %d came %v after the previous", i, gap)
	}
}

// flakyTransport fails requests with 503 while failing is set and counts
// them, standing in for a proxy in front of a struggling apiserver.
type flakyTransport struct {
	next    http.RoundTripper
	failing atomic.Bool
	failed  atomic.Int32
}

func (f *flakyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.failing.Load() {
		f.failed.Add(1)
		return &http.Response{
			StatusCode: http.StatusServiceUnavailable,
			Header:     http.Header{"Content-Type": []string{"text/plain"}},
			Body:       io.NopCloser(strings.NewReader("injected outage")),
			Request:    r,
		}, nil
	}
	return f.next.RoundTrip(r)
}

// TestLeaseSurvivesOutage injects 503s through the client transport: the
// controller backs off on the injected clock and recovers when the server
// comes back.
func TestLeaseSurvivesOutage(t *testing.T) {
	ctx := context.Background()
	const name = "lease-node-flaky"
	createNode(t, srv.NodeClient(name), name)
	cfg := srv.NodeConfig(name)
	flaky := &flakyTransport{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { flaky.next = rt; return flaky }
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	var repeated atomic.Int32
	clk := clocktesting.NewFakeClock(time.Now())
	ctl, err := lease.New(lease.Config{
		Client: clientset.Wrap(cs), NodeName: name, Clock: clk,
		OnRepeatedFailure: func(string, error) { repeated.Add(1) },
	})
	require.NoError(t, err)
	require.NoError(t, ctl.Renew(ctx, name))

	flaky.failing.Store(true)
	for i, want := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond} {
		clk.Step(10 * time.Second)
		err := ctl.Renew(ctx, name)
		require.Error(t, err, "attempt %d", i)
		next, _ := ctl.NextRenewal(name)
		require.Equal(t, want, next.Sub(clk.Now()))
	}
	require.EqualValues(t, 2, repeated.Load())
	require.Positive(t, flaky.failed.Load())

	flaky.failing.Store(false)
	clk.Step(time.Second)
	require.NoError(t, ctl.Renew(ctx, name))
	l, err := srv.AdminClient().CoordinationV1().Leases(apiserver.NodeLeaseNamespace).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.True(t, l.Spec.RenewTime.Time.Equal(clk.Now().Truncate(time.Microsecond)))
}

func nodeObj(name string) *v1.Node { return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
