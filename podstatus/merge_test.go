package podstatus

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	t0 = metav1.NewTime(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
)

func cond(t v1.PodConditionType, s v1.ConditionStatus) v1.PodCondition {
	return v1.PodCondition{Type: t, Status: s, LastTransitionTime: t0}
}

func condTypes(cs []v1.PodCondition) map[v1.PodConditionType]v1.ConditionStatus {
	out := map[v1.PodConditionType]v1.ConditionStatus{}
	for _, c := range cs {
		out[c.Type] = c.Status
	}
	return out
}

func TestMerge(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	running := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
		cond(v1.PodReady, v1.ConditionTrue), cond(v1.ContainersReady, v1.ConditionTrue), cond(v1.PodInitialized, v1.ConditionTrue)},
		ContainerStatuses: []v1.ContainerStatus{{Name: "app", Ready: true}}}
	failed := *running.DeepCopy()
	failed.Phase, failed.Reason = v1.PodFailed, "Evicted"
	failed.Conditions = append(failed.Conditions, cond(v1.DisruptionTarget, v1.ConditionTrue))
	for _, tc := range []struct {
		name     string
		found    v1.PodStatus
		kubelet  v1.PodStatus
		couldRun bool
		phase    v1.PodPhase
		reason   string
		conds    map[v1.PodConditionType]v1.ConditionStatus
	}{{
		name: "others' conditions are kept, the kubelet's replaced",
		found: v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionFalse),
			cond("example.com/gate", v1.ConditionTrue), cond(v1.DisruptionTarget, v1.ConditionTrue)}},
		kubelet: running, phase: v1.PodRunning,
		conds: map[v1.PodConditionType]v1.ConditionStatus{v1.PodReady: v1.ConditionTrue, v1.ContainersReady: v1.ConditionTrue,
			v1.PodInitialized: v1.ConditionTrue, "example.com/gate": v1.ConditionTrue, v1.DisruptionTarget: v1.ConditionTrue},
	}, {
		name: "a kubelet-owned condition the kubelet no longer sets is removed",
		found: v1.PodStatus{Phase: v1.PodRunning, Conditions: append([]v1.PodCondition{cond(v1.PodResizeInProgress, v1.ConditionTrue)},
			running.Conditions...)},
		kubelet: running, phase: v1.PodRunning,
		conds: map[v1.PodConditionType]v1.ConditionStatus{v1.PodReady: v1.ConditionTrue, v1.ContainersReady: v1.ConditionTrue, v1.PodInitialized: v1.ConditionTrue},
	}, {
		name:  "terminal is final",
		found: v1.PodStatus{Phase: v1.PodSucceeded, Reason: "Done", Conditions: running.Conditions}, kubelet: running,
		phase: v1.PodSucceeded, reason: "Done",
		conds: map[v1.PodConditionType]v1.ConditionStatus{v1.PodReady: v1.ConditionFalse, v1.ContainersReady: v1.ConditionFalse, v1.PodInitialized: v1.ConditionTrue},
	}, {
		name:  "the terminal phase waits while containers could run; so does DisruptionTarget",
		found: running, kubelet: failed, couldRun: true, phase: v1.PodRunning,
		conds: map[v1.PodConditionType]v1.ConditionStatus{v1.PodReady: v1.ConditionTrue, v1.ContainersReady: v1.ConditionTrue, v1.PodInitialized: v1.ConditionTrue},
	}, {
		name:  "terminal once nothing runs, never ready, with DisruptionTarget",
		found: running, kubelet: failed, phase: v1.PodFailed, reason: "Evicted",
		conds: map[v1.PodConditionType]v1.ConditionStatus{v1.PodReady: v1.ConditionFalse, v1.ContainersReady: v1.ConditionFalse,
			v1.PodInitialized: v1.ConditionTrue, v1.DisruptionTarget: v1.ConditionTrue},
	}, {
		name:  "reason and message found stay with the phase",
		found: v1.PodStatus{Phase: v1.PodRunning, Reason: "Why", Message: "because"}, kubelet: running,
		phase: v1.PodRunning, reason: "Why",
		conds: map[v1.PodConditionType]v1.ConditionStatus{v1.PodReady: v1.ConditionTrue, v1.ContainersReady: v1.ConditionTrue, v1.PodInitialized: v1.ConditionTrue},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Merge(pod, tc.found, tc.kubelet, tc.couldRun, t1)
			assert.Equal(t, tc.phase, got.Phase)
			assert.Equal(t, tc.reason, got.Reason)
			assert.Equal(t, tc.conds, condTypes(got.Conditions))
		})
	}
}

func TestMergeKeepsFieldsOthersOwn(t *testing.T) {
	name := "claim"
	found := v1.PodStatus{NominatedNodeName: "n1", ResourceClaimStatuses: []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &name}},
		NodeAllocatableResourceClaimStatuses: []v1.NodeAllocatableResourceClaimStatus{{ResourceClaimName: "claim", Containers: []string{"c"}}}}
	got := Merge(&v1.Pod{}, found, v1.PodStatus{Phase: v1.PodPending}, false, t1)
	assert.Equal(t, "n1", got.NominatedNodeName)
	assert.Equal(t, found.ResourceClaimStatuses, got.ResourceClaimStatuses)
	assert.Equal(t, found.NodeAllocatableResourceClaimStatuses, got.NodeAllocatableResourceClaimStatuses)
}

// TestMergeStampsWhatChanges: the conditions Merge changes get now, to the
// second, unless found already has them so.
func TestMergeStampsWhatChanges(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}, {Name: "gone"}}}}
	now := metav1.NewTime(t1.Add(700 * time.Millisecond))
	disruption := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "TerminationByKubelet", LastTransitionTime: t0}
	kubelet := v1.PodStatus{Phase: v1.PodSucceeded, Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionTrue), disruption}}
	got := Merge(pod, v1.PodStatus{Phase: v1.PodRunning}, kubelet, false, now)
	for _, ct := range []v1.PodConditionType{v1.ContainersReady, v1.PodReady, v1.DisruptionTarget} {
		c := FindCondition(got.Conditions, ct)
		require.NotNil(t, c, "%s", ct)
		assert.Equal(t, t1, c.LastTransitionTime, "%s", ct)
	}
	cr := FindCondition(got.Conditions, v1.ContainersReady)
	assert.Equal(t, v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: "PodCompleted", ObservedGeneration: 3,
		LastTransitionTime: t1}, *cr, "added, whatever the containers' statuses say")

	found := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{disruption, cond(v1.ContainersReady, v1.ConditionFalse)}}
	got = Merge(pod, found, kubelet, false, now)
	assert.Equal(t, t0, FindCondition(got.Conditions, v1.DisruptionTarget).LastTransitionTime, "found so already")
	assert.Equal(t, t0, FindCondition(got.Conditions, v1.ContainersReady).LastTransitionTime, "found so already")
	assert.Equal(t, t1, FindCondition(got.Conditions, v1.PodReady).LastTransitionTime)
}

func TestReadyConditions(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := func(gates ...v1.PodConditionType) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "side", RestartPolicy: &always}, {Name: "init"}},
			Containers: []v1.Container{{Name: "a"}, {Name: "b"}}}}
		for _, g := range gates {
			p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, v1.PodReadinessGate{ConditionType: g})
		}
		return p
	}
	statuses := func(side, a, b bool) *v1.PodStatus {
		return &v1.PodStatus{Phase: v1.PodRunning,
			InitContainerStatuses: []v1.ContainerStatus{{Name: "side", Ready: side}, {Name: "init"}},
			ContainerStatuses:     []v1.ContainerStatus{{Name: "a", Ready: a}, {Name: "b", Ready: b}}}
	}
	gated := pod("example.com/lb", "example.com/dns")
	gated.Status.Conditions = []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionFalse}}
	open := pod("example.com/lb")
	open.Status.Conditions = []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}}
	succeeded := statuses(false, false, false)
	succeeded.Phase = v1.PodSucceeded
	for _, tc := range []struct {
		name           string
		pod            *v1.Pod
		status         *v1.PodStatus
		cr, ready      v1.ConditionStatus
		reason, readyM string
		crMessage      string
	}{
		{name: "all ready", pod: pod(), status: statuses(true, true, true), cr: v1.ConditionTrue, ready: v1.ConditionTrue},
		{name: "an app container and the sidecar unready", pod: pod(), status: statuses(false, true, false),
			cr: v1.ConditionFalse, ready: v1.ConditionFalse, reason: "ContainersNotReady",
			crMessage: "containers with unready status: [side b]", readyM: "containers with unready status: [side b]"},
		{name: "unknown container", pod: pod(), status: &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "a", Ready: true}}},
			cr: v1.ConditionFalse, ready: v1.ConditionFalse, reason: "ContainersNotReady",
			crMessage: "containers with unknown status: [side b]", readyM: "containers with unknown status: [side b]"},
		{name: "gates", pod: gated, status: statuses(true, true, true), cr: v1.ConditionTrue, ready: v1.ConditionFalse,
			reason: "ReadinessGatesNotReady",
			readyM: `the status of pod readiness gate "example.com/lb" is not "True", but False, corresponding condition of pod readiness gate "example.com/dns" does not exist.`},
		{name: "gate true", pod: open, status: statuses(true, true, true), cr: v1.ConditionTrue, ready: v1.ConditionTrue},
		{name: "succeeded", pod: pod(), status: succeeded, cr: v1.ConditionFalse, ready: v1.ConditionFalse, reason: "PodCompleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr, ready := ReadyConditions(tc.pod, tc.status)
			assert.Equal(t, v1.ContainersReady, cr.Type)
			assert.Equal(t, v1.PodReady, ready.Type)
			assert.Equal(t, tc.cr, cr.Status)
			assert.Equal(t, tc.ready, ready.Status)
			assert.Equal(t, tc.reason, ready.Reason)
			assert.Equal(t, tc.readyM, ready.Message)
			assert.Equal(t, tc.crMessage, cr.Message)
		})
	}
}

func TestKubeletConditionTypes(t *testing.T) {
	types := KubeletConditionTypes()
	for _, ct := range types {
		assert.True(t, OwnedByKubelet(ct), "%s", ct)
	}
	for _, ct := range []v1.PodConditionType{v1.DisruptionTarget, "example.com/gate"} {
		assert.False(t, OwnedByKubelet(ct), "%s", ct)
		assert.NotContains(t, types, ct)
	}
	types[0] = "changed"
	assert.Equal(t, v1.PodScheduled, KubeletConditionTypes()[0], "a fresh slice each call")
}
