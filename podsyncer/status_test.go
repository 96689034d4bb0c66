package podsyncer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodConditions(t *testing.T) {
	now := metav1.NewTime(time.Unix(100, 0))
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init1"}, {Name: "init2"}},
		Containers:     []v1.Container{{Name: "app"}},
		ReadinessGates: []v1.PodReadinessGate{{ConditionType: "example.com/gate"}},
	}, Status: v1.PodStatus{Conditions: []v1.PodCondition{{Type: "example.com/gate", Status: v1.ConditionFalse}}}}
	byType := func(cs []v1.PodCondition) map[v1.PodConditionType]v1.PodCondition {
		m := map[v1.PodConditionType]v1.PodCondition{}
		for _, c := range cs {
			m[c.Type] = c
		}
		return m
	}

	s := &v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{{Name: "app"}}}
	got := byType(podConditions(pod, s, &v1.PodStatus{}, now, false, false, []string{"init2"}))
	assert.Equal(t, "containers with incomplete status: [init2]", got[v1.PodInitialized].Message)
	assert.Equal(t, "ContainersNotInitialized", got[v1.PodInitialized].Reason)
	assert.Equal(t, "PodFailed", got[v1.ContainersReady].Reason)
	assert.Equal(t, int64(3), got[v1.PodReady].ObservedGeneration)
	assert.Equal(t, v1.ConditionFalse, got["example.com/gate"].Status, "conditions of others are kept")

	s = &v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "app", Ready: true}}}
	got = byType(podConditions(pod, s, &v1.PodStatus{}, now, true, true, nil))
	assert.Equal(t, v1.ConditionTrue, got[v1.ContainersReady].Status)
	assert.Equal(t, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "ReadinessGatesNotReady",
		Message: `the status of pod readiness gate "example.com/gate" is not "True", but False`, LastTransitionTime: now, ObservedGeneration: 3},
		got[v1.PodReady])
	pod.Status.Conditions[0].Status = v1.ConditionTrue
	got = byType(podConditions(pod, s, &v1.PodStatus{}, now, true, true, nil))
	assert.Equal(t, v1.ConditionTrue, got[v1.PodReady].Status)

	s.ContainerStatuses[0].Ready = false
	got = byType(podConditions(pod, s, &v1.PodStatus{}, now, true, true, nil))
	assert.Equal(t, "containers with unready status: [app]", got[v1.PodReady].Message)

	// The DisruptionTarget an eviction set stays in later statuses.
	old := &v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "TerminationByKubelet"}}}
	got = byType(podConditions(pod, s, old, now, true, true, nil))
	assert.Equal(t, "TerminationByKubelet", got[v1.DisruptionTarget].Reason)
}

func TestContainerConfigCarriesSpecFields(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	c := &v1.Container{Name: "c", Image: "busybox", WorkingDir: "/work", Stdin: true, StdinOnce: true, TTY: true}
	cfg := containerConfig(pod, c, 2)
	assert.Equal(t, "/work", cfg.WorkingDir)
	assert.True(t, cfg.Stdin && cfg.StdinOnce && cfg.Tty, "kubectl run -i/-t and attach need them")
	assert.Equal(t, "c/2.log", cfg.LogPath)
}

func TestPodPhaseWithContainerRestartPolicies(t *testing.T) {
	exited := func(name string, code int32) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
	}
	backoff := func(name string, code int32) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
	}
	never, always := v1.ContainerRestartPolicyNever, v1.ContainerRestartPolicyAlways
	pod := func(policy v1.RestartPolicy, a *v1.ContainerRestartPolicy) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{RestartPolicy: policy, Containers: []v1.Container{{Name: "a", RestartPolicy: a}, {Name: "b"}}}}
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		st   []v1.ContainerStatus
		want v1.PodPhase
	}{
		{"Never pod, all succeeded", pod(v1.RestartPolicyNever, nil), []v1.ContainerStatus{exited("a", 0), exited("b", 0)}, v1.PodSucceeded},
		{"Never pod, one failed", pod(v1.RestartPolicyNever, nil), []v1.ContainerStatus{exited("a", 0), exited("b", 1)}, v1.PodFailed},
		{"OnFailure pod, one failed and waits to restart", pod(v1.RestartPolicyOnFailure, nil), []v1.ContainerStatus{exited("a", 0), backoff("b", 1)}, v1.PodRunning},
		{"Always pod, stopped", pod(v1.RestartPolicyAlways, nil), []v1.ContainerStatus{exited("a", 0), exited("b", 0)}, v1.PodRunning},
		{"Never pod, container Always: still running", pod(v1.RestartPolicyNever, &always), []v1.ContainerStatus{exited("a", 0), exited("b", 0)}, v1.PodRunning},
		{"Always pod, both containers final", &v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways,
			Containers: []v1.Container{{Name: "a", RestartPolicy: &never}, {Name: "b", RestartPolicy: &never}}}},
			[]v1.ContainerStatus{exited("a", 0), exited("b", 2)}, v1.PodFailed},
		{"a status missing", pod(v1.RestartPolicyNever, nil), []v1.ContainerStatus{exited("a", 0)}, v1.PodPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, podPhase(tc.pod, &v1.PodStatus{ContainerStatuses: tc.st}, true, false))
		})
	}
}
