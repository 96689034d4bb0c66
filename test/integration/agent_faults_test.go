package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit/nodekit/crisim"
)

// TestReferenceAgentRuntimeFaultsMidPlan fails the runtime in the middle
// of a pod's action plan — sandbox creation, container creation, a start
// after a successful create — and checks that later plans complete the pod:
// every container ends up running exactly once, the init container ran
// before the apps, and a container whose start failed is replaced by a new
// instance rather than left behind.
func TestReferenceAgentRuntimeFaultsMidPlan(t *testing.T) {
	ctx := context.Background()
	const node = "faults-node"
	admin := srv.AdminClient()
	ensureDefaultServiceAccount(t, admin, "default")
	sim := crisim.New(crisim.Config{})
	unavailable := errors.New("runtime hiccup")
	sim.Inject("RunPodSandbox", crisim.Fault{Err: unavailable, Times: 1})
	sim.Inject("CreateContainer", crisim.Fault{Err: unavailable, Times: 2})
	stop := runAgent(t, node, sim, t.TempDir())
	defer stop()

	always := v1.ContainerRestartPolicyAlways
	// The simulator runs containers until scripted to exit: init does after 1s.
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "faulty", Annotations: map[string]string{crisim.AnnotationScriptPrefix + "init": "exit-after=1s exit-code=0"}}, Spec: v1.PodSpec{NodeName: node, RestartPolicy: v1.RestartPolicyNever,
		InitContainers: []v1.Container{{Name: "init", Image: "busybox"}, {Name: "side", Image: "busybox", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "a", Image: "busybox"}, {Name: "b", Image: "busybox"}}}}
	_, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)

	// Once the pod's first containers were created, fail two starts: the
	// containers stay Created and must be replaced.
	require.Eventually(t, func() bool { return sim.Calls("CreateContainer") >= 3 }, 45*time.Second, 50*time.Millisecond)
	sim.Inject("StartContainer", crisim.Fault{Err: unavailable, Times: 2})

	require.Eventually(t, func() bool {
		p := getPod(t, admin, "faulty")
		if p == nil || p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) != 2 || len(p.Status.InitContainerStatuses) != 2 {
			return false
		}
		for _, cs := range append(p.Status.ContainerStatuses, p.Status.InitContainerStatuses[1]) {
			if cs.State.Running == nil {
				return false
			}
		}
		return p.Status.InitContainerStatuses[0].State.Terminated != nil
	}, 60*time.Second, 100*time.Millisecond, "the pod completes its plan despite the faults: %+v", podStatusOf(t, "faulty"))
	p := getPod(t, admin, "faulty")
	init := p.Status.InitContainerStatuses[0].State.Terminated
	for _, cs := range p.Status.ContainerStatuses {
		assert.False(t, cs.State.Running.StartedAt.Before(&init.FinishedAt), "%s started after the init container finished", cs.Name)
	}
	assert.GreaterOrEqual(t, sim.Calls("StartContainer"), 6, "two failed starts were retried")
	grace := int64(0)
	require.NoError(t, admin.CoreV1().Pods("default").Delete(ctx, "faulty", metav1.DeleteOptions{GracePeriodSeconds: &grace}))
	require.Eventually(t, func() bool { return getPod(t, admin, "faulty") == nil }, 45*time.Second, 100*time.Millisecond)
}

func podStatusOf(t *testing.T, name string) any {
	if p := getPod(t, srv.AdminClient(), name); p != nil {
		return p.Status
	}
	return nil
}
