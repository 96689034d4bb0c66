package virtualnode

import (
	"context"
	"github.com/nodekit/nodekit/virtualnode/simulated"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeclient/clientset"
)

// TestAgentRun drives the agent against a fake clientset: nodes register
// Ready, a pod runs, a pod removed from the API is stopped and forgotten, and
// Run returns cleanly.
func TestAgentRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	cs := fake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Now())
	sim, err := simulated.New(simulated.Config{Clock: clk})
	require.NoError(t, err)
	defer sim.Close()
	a, err := New(Config{Client: clientset.Wrap(cs), Nodes: []string{"vn-0", "vn-1"}, Provider: sim, Clock: clk, CPU: 4})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	require.Eventually(t, func() bool {
		n, err := cs.CoreV1().Nodes().Get(ctx, "vn-1", metav1.GetOptions{})
		return err == nil && n.Status.Capacity.Cpu().Value() == 4 && n.Labels[DefaultNodeLabel] == "true"
	}, 10*time.Second, 10*time.Millisecond)

	pod := testPod(v1.RestartPolicyAlways, nil)
	pod.Spec.NodeName = "vn-1"
	other := testPod(v1.RestartPolicyAlways, nil)
	other.Name, other.UID, other.Spec.NodeName = "other", "uid-2", "elsewhere"
	for _, p := range []*v1.Pod{pod, other} {
		_, err = cs.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		p, err := cs.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning && p.Status.HostIP == "172.16.0.2"
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 1, sim.Len(), "a pod of another node is not run")

	require.NoError(t, cs.CoreV1().Pods("ns").Delete(ctx, "p", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return sim.Len() == 0 }, 10*time.Second, 10*time.Millisecond)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	require.ErrorIs(t, a.Run(context.Background()), ErrAlreadyRunning)
}
