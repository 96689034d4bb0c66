package virtualnode

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/virtualnode/simulated"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testPod(policy v1.RestartPolicy, ann map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1", Annotations: ann},
		Spec: v1.PodSpec{NodeName: "n", RestartPolicy: policy,
			Containers: []v1.Container{{Name: "c", Image: "img"}}},
	}
}

func TestPodStatusPatch(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil)
	old := &v1.PodStatus{Phase: v1.PodPending, PodIP: "10.64.0.1"}
	st := &v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.64.0.1"}
	require.True(t, StatusChanged(old, st))
	patch, err := PodStatusPatch(pod.UID, old, st)
	require.NoError(t, err)
	require.Contains(t, string(patch), `"uid":"uid-1"`)
	require.Contains(t, string(patch), `"phase":"Running"`)
	require.NotContains(t, string(patch), `"podIP"`, "unchanged fields are not sent")
}

func TestNewInvalidConfig(t *testing.T) {
	cs := fake.NewClientset()
	sim, err := simulated.New(simulated.Config{})
	require.NoError(t, err)
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no client", Config{Nodes: []string{"a"}, Provider: sim}},
		{"no provider", Config{Client: clientset.Wrap(cs), Nodes: []string{"a"}}},
		{"no nodes", Config{Client: clientset.Wrap(cs), Provider: sim}},
		{"empty name", Config{Client: clientset.Wrap(cs), Nodes: []string{""}, Provider: sim}},
		{"duplicate", Config{Client: clientset.Wrap(cs), Nodes: []string{"a", "a"}, Provider: sim}},
		{"negative", Config{Client: clientset.Wrap(cs), Nodes: []string{"a"}, CPU: -1, Provider: sim}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			require.ErrorIs(t, err, ErrInvalidConfig)
		})
	}
	_, err = New(Config{Client: clientset.Wrap(cs), Nodes: []string{"a", "b"}, Provider: sim})
	require.NoError(t, err)
}

func TestHousekeepingFollowsChange(t *testing.T) {
	a := &Agent{}
	now := t0
	require.True(t, a.housekeepingDue(now), "the first pass")
	now = now.Add(2 * time.Second)
	require.False(t, a.housekeepingDue(now), "nothing changed")
	a.podEvents.Add(1)
	require.True(t, a.housekeepingDue(now), "a pod changed")
	now = now.Add(2 * time.Second)
	require.False(t, a.housekeepingDue(now))
	now = now.Add(housekeepingMaxGap)
	require.True(t, a.housekeepingDue(now), "at least every housekeepingMaxGap")
}

func TestLeaseDefaultsScaleWithNodes(t *testing.T) {
	for _, tc := range []struct{ nodes, workers int }{{1, 8}, {800, 8}, {1000, 10}, {5000, 50}} {
		cfg := Config{Client: clientset.Wrap(fake.NewClientset()), Provider: &statusProvider{}, Nodes: make([]string, tc.nodes)}
		for i := range cfg.Nodes {
			cfg.Nodes[i] = fmt.Sprintf("vn-%d", i)
		}
		require.NoError(t, cfg.setDefaults())
		require.Equal(t, tc.workers, cfg.LeaseWorkers, "%d nodes", tc.nodes)
		require.Equal(t, DefaultLeaseBatchWindow, cfg.LeaseBatchWindow)
	}
	short := Config{Client: clientset.Wrap(fake.NewClientset()), Provider: &statusProvider{}, Nodes: []string{"a"}, LeaseDuration: 4 * time.Second}
	require.NoError(t, short.setDefaults())
	require.Equal(t, 250*time.Millisecond, short.LeaseBatchWindow, "a quarter of the 1s renew interval")
	_, err := New(short)
	require.NoError(t, err)
}

func TestPodWritesYieldToOverdueLeases(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := clocktesting.NewFakeClock(t0)
	a, err := New(Config{Client: clientset.Wrap(fake.NewClientset()), Provider: &statusProvider{}, Nodes: []string{"vn-0"}, Clock: clk, LeaseSpread: time.Second})
	require.NoError(t, err)
	ctx := context.Background()
	returned := func() chan struct{} {
		done := make(chan struct{})
		go func() { a.yieldToLeases(ctx); close(done) }()
		return done
	}

	// Nothing overdue: no wait.
	<-returned()

	// The lease is overdue (Run is not renewing it): a write waits, at most
	// maxYield.
	clk.Step(time.Second + 2*time.Second + time.Millisecond) // a fifth of the 10s renew interval
	done := returned()
	for clk.Now().Before(t0.Add(time.Second + 2*time.Second + maxYield)) {
		require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
		select {
		case <-done:
			t.Fatalf("returned at %v, the lease %v overdue", clk.Now().Sub(t0), a.leases.Lag())
		default:
		}
		clk.Step(yieldPoll)
	}
	<-done

	// The lease renewed meanwhile: the write goes at the next poll.
	done = returned()
	require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
	require.NoError(t, a.leases.Renew(ctx, "vn-0"))
	clk.Step(yieldPoll)
	<-done
}

// TestLagLimitIsAFifthOfTheRenewInterval: a longer lease lets the renewals
// fall further behind before pod writes wait.
func TestLagLimitIsAFifthOfTheRenewInterval(t *testing.T) {
	for _, c := range []struct{ lease, want time.Duration }{
		{0, 2 * time.Second}, {40 * time.Second, 2 * time.Second}, {200 * time.Second, 10 * time.Second},
	} {
		a, err := New(Config{Client: clientset.Wrap(fake.NewClientset()), Provider: &statusProvider{}, Nodes: []string{"vn-0"},
			LeaseDuration: c.lease})
		require.NoError(t, err)
		require.Equal(t, c.want, a.lagLimit, "lease %v", c.lease)
	}
}
