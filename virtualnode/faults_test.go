package virtualnode

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/virtualnode/simulated"
)

// faultyProvider panics in CreatePod for one pod and hangs (until released)
// for another; every other pod goes to the simulator.
type faultyProvider struct {
	*simulated.Provider
	release chan struct{}
	mu      sync.Mutex
	hung    bool
}

func (f *faultyProvider) CreatePod(ctx context.Context, pod *v1.Pod) error {
	switch pod.Name {
	case "panics":
		panic("provider bug")
	case "hangs":
		f.mu.Lock()
		f.hung = true
		f.mu.Unlock()
		select {
		case <-f.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return f.Provider.CreatePod(ctx, pod)
}

// TestProviderFaultsStayInTheirPod: a provider that panics in one pod and
// hangs in another stalls neither the other pods nor the node leases.
func TestProviderFaultsStayInTheirPod(t *testing.T) {
	defer goleak.VerifyNone(t)
	cs := fake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Now())
	sim, err := simulated.New(simulated.Config{Clock: clk})
	require.NoError(t, err)
	defer sim.Close()
	p := &faultyProvider{Provider: sim, release: make(chan struct{})}
	a, err := New(Config{Client: clientset.Wrap(cs), Nodes: []string{"vn-0"}, Provider: p, Clock: clk})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		close(p.release)
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return")
		}
	}()
	for i, name := range []string{"panics", "hangs", "ok-1", "ok-2"} {
		pod := testPod(v1.RestartPolicyAlways, nil)
		pod.Name, pod.UID, pod.Spec.NodeName = name, types.UID("uid-"+name), "vn-0"
		_, err := cs.CoreV1().Pods("ns").Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err, i)
	}
	running := func(name string) bool {
		p, err := cs.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning
	}
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.hung && running("ok-1") && running("ok-2")
	}, 10*time.Second, 10*time.Millisecond, "the other pods run while one hangs and one panics")
	require.False(t, running("panics"))

	// The node's lease keeps renewing.
	var first time.Time
	require.Eventually(t, func() bool {
		clk.Step(time.Second)
		l, err := cs.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, "vn-0", metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil {
			return false
		}
		first = l.Spec.RenewTime.Time
		return true
	}, 10*time.Second, 10*time.Millisecond, "the lease exists")
	require.Eventually(t, func() bool {
		clk.Step(time.Second)
		l, err := cs.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, "vn-0", metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.Time.After(first)
	}, 10*time.Second, 10*time.Millisecond, "the lease renews")
}
