package integration

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/examples/kubelet/agent"
)

func podCondition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	if p == nil {
		return nil
	}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// setCondition adds or replaces a pod condition as a controller would,
// through the status subresource.
func setCondition(t *testing.T, cs kubernetes.Interface, name string, c v1.PodCondition) {
	t.Helper()
	require.Eventually(t, func() bool {
		p := getPod(t, cs, name)
		found := false
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == c.Type {
				p.Status.Conditions[i], found = c, true
			}
		}
		if !found {
			p.Status.Conditions = append(p.Status.Conditions, c)
		}
		_, err := cs.CoreV1().Pods("default").UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
		return err == nil // a conflict with the agent's write: try again
	}, 30*time.Second, 50*time.Millisecond)
}

// TestReferenceAgentStatusOwnership: the agent writes only what the
// kubelet owns. A readiness gate set by an admin holds Ready false and then
// releases it; conditions written by others (DisruptionTarget, a custom
// one) survive the agent's later writes; a terminal pod is never
// un-terminated; observedGeneration follows the pod.
func TestReferenceAgentStatusOwnership(t *testing.T) {
	ctx := context.Background()
	const node = "status-node"
	admin := srv.AdminClient()
	ensureDefaultServiceAccount(t, admin, "default")
	sim := crisim.New(crisim.Config{})
	stop := runAgent(t, node, sim, t.TempDir())
	defer stop()
	eventually := func(msg string, f func() bool) {
		t.Helper()
		require.Eventually(t, f, 45*time.Second, 100*time.Millisecond, msg)
	}

	gated := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gated"}, Spec: v1.PodSpec{NodeName: node,
		ReadinessGates: []v1.PodReadinessGate{{ConditionType: "example.com/lb"}},
		Containers:     []v1.Container{{Name: "app", Image: "busybox"}}}}
	_, err := admin.CoreV1().Pods("default").Create(ctx, gated, metav1.CreateOptions{})
	require.NoError(t, err)
	eventually("containers ready, the pod held by its gate", func() bool {
		p := getPod(t, admin, "gated")
		cr, r := podCondition(p, v1.ContainersReady), podCondition(p, v1.PodReady)
		return cr != nil && cr.Status == v1.ConditionTrue && r != nil && r.Status == v1.ConditionFalse && r.Reason == "ReadinessGatesNotReady"
	})
	p := getPod(t, admin, "gated")
	assert.Equal(t, `corresponding condition of pod readiness gate "example.com/lb" does not exist.`, podCondition(p, v1.PodReady).Message)
	assert.Equal(t, p.Generation, p.Status.ObservedGeneration)

	setCondition(t, admin, "gated", v1.PodCondition{Type: "example.com/audit", Status: v1.ConditionTrue, Reason: "Audited"})
	setCondition(t, admin, "gated", v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "PreemptionByScheduler"})
	setCondition(t, admin, "gated", v1.PodCondition{Type: "example.com/lb", Status: v1.ConditionTrue})
	eventually("the gate opens Ready", func() bool {
		r := podCondition(getPod(t, admin, "gated"), v1.PodReady)
		return r != nil && r.Status == v1.ConditionTrue
	})
	// An update of the spec (generation) makes the agent write again.
	p = getPod(t, admin, "gated")
	p.Spec.ActiveDeadlineSeconds = new(int64)
	*p.Spec.ActiveDeadlineSeconds = 3600
	_, err = admin.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually("observedGeneration follows the spec", func() bool {
		p := getPod(t, admin, "gated")
		return p.Generation > 1 && p.Status.ObservedGeneration == p.Generation
	})
	p = getPod(t, admin, "gated")
	for _, ct := range []v1.PodConditionType{"example.com/audit", v1.DisruptionTarget, "example.com/lb"} {
		c := podCondition(p, ct)
		if assert.NotNil(t, c, "%s survives the agent's writes", ct) {
			assert.Equal(t, v1.ConditionTrue, c.Status)
		}
	}
	assert.Equal(t, "PreemptionByScheduler", podCondition(p, v1.DisruptionTarget).Reason)

	// A finished pod stays finished, whatever is written to it later.
	done := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "done", Annotations: map[string]string{crisim.AnnotationScriptPrefix + "app": "exit-after=1s exit-code=0"}},
		Spec: v1.PodSpec{NodeName: node, RestartPolicy: v1.RestartPolicyNever, Containers: []v1.Container{{Name: "app", Image: "busybox"}}}}
	_, err = admin.CoreV1().Pods("default").Create(ctx, done, metav1.CreateOptions{})
	require.NoError(t, err)
	eventually("the pod succeeds", func() bool {
		p := getPod(t, admin, "done")
		return p != nil && p.Status.Phase == v1.PodSucceeded
	})
	p = getPod(t, admin, "done")
	for _, ct := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady} {
		if c := podCondition(p, ct); assert.NotNil(t, c) {
			assert.Equal(t, v1.ConditionFalse, c.Status, "%s of a finished pod", ct)
			assert.Equal(t, "PodCompleted", c.Reason)
		}
	}
	p.Labels = map[string]string{"touched": "yes"}
	_, err = admin.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	setCondition(t, admin, "done", v1.PodCondition{Type: "example.com/audit", Status: v1.ConditionTrue})
	eventually("the agent saw the update", func() bool {
		p := getPod(t, admin, "done")
		return p.Labels["touched"] == "yes" && podCondition(p, "example.com/audit") != nil
	})
	assert.Equal(t, v1.PodSucceeded, getPod(t, admin, "done").Status.Phase)

	grace := int64(0)
	for _, name := range []string{"gated", "done"} {
		require.NoError(t, admin.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace}))
	}
	eventually("pods gone", func() bool { return getPod(t, admin, "gated") == nil && getPod(t, admin, "done") == nil })
}

// unreachableTransport fails every request while down is set, as an API server
// that went away would.
type unreachableTransport struct {
	next http.RoundTripper
	down *atomic.Bool
}

func (f unreachableTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.down.Load() {
		return nil, errors.New("dial tcp: connect: connection refused")
	}
	return f.next.RoundTrip(r)
}

// TestReferenceAgentStatusWhileAPIServerAway: a container exits while the
// agent cannot reach the API server; the agent keeps the pod's status and
// writes it once the API server answers again.
func TestReferenceAgentStatusWhileAPIServerAway(t *testing.T) {
	ctx := context.Background()
	const node = "outage-node"
	admin := srv.AdminClient()
	ensureDefaultServiceAccount(t, admin, "default")
	sim := crisim.New(crisim.Config{})
	var down atomic.Bool
	kube := srv.NodeConfig(node)
	kube.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return unreachableTransport{next: rt, down: &down} }
	actx, cancel := context.WithCancel(ctx)
	a, err := agent.New(actx, agent.Options{NodeName: node, Kube: kube, Sim: sim, HealthzAddr: "127.0.0.1:0",
		PodManifestPath: t.TempDir(), MemoryCapacity: 4 << 30})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	defer func() {
		down.Store(false)
		cancel()
		require.NoError(t, <-done)
	}()

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "outage"}, Spec: v1.PodSpec{NodeName: node, RestartPolicy: v1.RestartPolicyNever,
		Containers: []v1.Container{{Name: "app", Image: "busybox"}}}}
	_, err = admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	var id string
	require.Eventually(t, func() bool {
		p := getPod(t, admin, "outage")
		if p == nil || p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		_, id, _ = strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
		return id != ""
	}, 45*time.Second, 100*time.Millisecond)

	down.Store(true)
	require.NoError(t, sim.ExitContainer(id, 3, "Error"))
	require.Eventually(t, func() bool {
		for _, p := range a.Pods() {
			if p.Name == "outage" {
				return p.Status.Phase == v1.PodFailed
			}
		}
		return false
	}, 45*time.Second, 100*time.Millisecond, "the agent saw the exit")
	assert.Equal(t, v1.PodRunning, getPod(t, admin, "outage").Status.Phase, "nothing reached the API server")

	down.Store(false)
	require.Eventually(t, func() bool {
		p := getPod(t, admin, "outage")
		return p.Status.Phase == v1.PodFailed && p.Status.ContainerStatuses[0].State.Terminated != nil &&
			p.Status.ContainerStatuses[0].State.Terminated.ExitCode == 3
	}, 45*time.Second, 100*time.Millisecond, "the queued status lands: %+v", podStatusOf(t, "outage"))
	grace := int64(0)
	require.NoError(t, admin.CoreV1().Pods("default").Delete(ctx, "outage", metav1.DeleteOptions{GracePeriodSeconds: &grace}))
}
