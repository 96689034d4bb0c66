package podstatus

// The upstream kubelet's status manager cases (pkg/kubelet/status,
// status_manager_test.go) on caching a status, re-expressed through the
// Manager's API, each named after its upstream test. Upstream's
// verifyUpdates (statuses queued for a write) is updates here.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
)

// tNano is a clock reading with nanoseconds, which statuses lose.
var tNano = time.Date(2026, 11, 25, 10, 0, 0, 123456789, time.UTC)

// upstreamPod is upstream's getTestPod.
func upstreamPod() *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "12345678", Name: "foo", Namespace: "new"}}
}

// messageStatus stands for upstream's getRandomPodStatus: a status that
// differs from any other by its message.
func messageStatus(msg string) v1.PodStatus { return v1.PodStatus{Message: msg} }

// readyStatus is upstream's getReadyPodStatus.
func readyStatus(s v1.ConditionStatus) v1.PodStatus {
	return v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: s}}}
}

func fakeClockManager(t *testing.T) (*Manager, *testclock.FakeClock) {
	t.Helper()
	clk := testclock.NewFakeClock(tNano)
	return newManager(t, Config{Clock: clk}), clk
}

// updates is upstream's verifyUpdates: how many pods have a status to
// write; those writes are then done (without a client, only recorded).
func updates(t *testing.T, m *Manager) int {
	t.Helper()
	n := m.Pending()
	for _, p := range m.Pods() {
		require.NoError(t, m.Sync(context.Background(), p.UID))
	}
	require.Zero(t, m.Pending())
	return n
}

func cachedStatus(t *testing.T, m *Manager, pod *v1.Pod) v1.PodStatus {
	t.Helper()
	s, ok := m.PodStatus(pod.UID)
	require.True(t, ok, "no status cached for %s", pod.UID)
	return s
}

func requireTime(t *testing.T, want time.Time, got metav1.Time, msgAndArgs ...any) {
	t.Helper()
	require.True(t, got.Time.Equal(want), "want %v, got %v %v", want, got.Time, fmt.Sprint(msgAndArgs...))
}

func startTime(t *testing.T, s v1.PodStatus) metav1.Time {
	t.Helper()
	require.NotNil(t, s.StartTime, "no start time")
	return *s.StartTime
}

func readyTransition(t *testing.T, s v1.PodStatus) metav1.Time {
	t.Helper()
	c := FindCondition(s.Conditions, v1.PodReady)
	require.NotNil(t, c)
	return c.LastTransitionTime
}

func TestNewStatus(t *testing.T) {
	m, _ := fakeClockManager(t)
	pod := upstreamPod()
	m.SetPodStatus(pod, messageStatus("a"))
	require.Equal(t, 1, updates(t, m))
	s := cachedStatus(t, m, pod)
	requireTime(t, tNano.Truncate(time.Second), startTime(t, s), "SetPodStatus sets a start time")
}

func TestNewStatusPreservesPodStartTime(t *testing.T) {
	m, _ := fakeClockManager(t)
	pod := upstreamPod()
	start := metav1.NewTime(tNano.Add(-time.Minute))
	pod.Status.StartTime = &start
	m.SetPodStatus(pod, messageStatus("a"))
	requireTime(t, start.Truncate(time.Second), startTime(t, cachedStatus(t, m, pod)))
}

func TestNewStatusSetsReadyTransitionTime(t *testing.T) {
	m, _ := fakeClockManager(t)
	pod := upstreamPod()
	m.SetPodStatus(pod, readyStatus(v1.ConditionTrue))
	require.Equal(t, 1, updates(t, m))
	requireTime(t, tNano.Truncate(time.Second), readyTransition(t, cachedStatus(t, m, pod)))
}

func TestChangedStatus(t *testing.T) {
	m, _ := fakeClockManager(t)
	pod := upstreamPod()
	m.SetPodStatus(pod, messageStatus("a"))
	require.Equal(t, 1, updates(t, m))
	m.SetPodStatus(pod, messageStatus("b"))
	require.Equal(t, 1, updates(t, m))
}

func TestChangedStatusKeepsStartTime(t *testing.T) {
	m, clk := fakeClockManager(t)
	pod := upstreamPod()
	first := messageStatus("a")
	now := metav1.NewTime(clk.Now())
	first.StartTime = &now
	m.SetPodStatus(pod, first)
	require.Equal(t, 1, updates(t, m))
	clk.Step(time.Minute)
	m.SetPodStatus(pod, messageStatus("b"))
	require.Equal(t, 1, updates(t, m))
	requireTime(t, now.Truncate(time.Second), startTime(t, cachedStatus(t, m, pod)))

	later := metav1.NewTime(clk.Now())
	third := messageStatus("c")
	third.StartTime = &later
	m.SetPodStatus(pod, third)
	requireTime(t, now.Truncate(time.Second), startTime(t, cachedStatus(t, m, pod)), "nodekit: the first start time wins over a caller's")
}

func TestChangedStatusUpdatesLastTransitionTime(t *testing.T) {
	m, clk := fakeClockManager(t)
	pod := upstreamPod()
	m.SetPodStatus(pod, readyStatus(v1.ConditionTrue))
	require.Equal(t, 1, updates(t, m))
	old := readyTransition(t, cachedStatus(t, m, pod))
	clk.Step(90 * time.Second)
	m.SetPodStatus(pod, readyStatus(v1.ConditionFalse))
	require.Equal(t, 1, updates(t, m))
	got := readyTransition(t, cachedStatus(t, m, pod))
	require.True(t, old.Before(&got))
	requireTime(t, clk.Now().Truncate(time.Second), got)
}

func TestUnchangedStatus(t *testing.T) {
	m, _ := fakeClockManager(t)
	pod := upstreamPod()
	m.SetPodStatus(pod, messageStatus("a"))
	m.SetPodStatus(pod, messageStatus("a"))
	require.Equal(t, 1, updates(t, m))
}

func TestUnchangedStatusPreservesLastTransitionTime(t *testing.T) {
	m, clk := fakeClockManager(t)
	pod := upstreamPod()
	m.SetPodStatus(pod, readyStatus(v1.ConditionTrue))
	require.Equal(t, 1, updates(t, m))
	old := readyTransition(t, cachedStatus(t, m, pod))
	require.False(t, old.IsZero(), "last transition time not set")
	clk.Step(90 * time.Second)
	m.SetPodStatus(pod, readyStatus(v1.ConditionTrue))
	require.Equal(t, 0, updates(t, m), "no update")
	require.Equal(t, old, readyTransition(t, cachedStatus(t, m, pod)))
}

// TestUpdateLastTransitionTime: upstream's table for updateLastTransitionTime,
// through SetPodStatus (the old condition is the pod's own before its first
// status), with the caller's own transition times added.
func TestUpdateLastTransitionTime(t *testing.T) {
	old := metav1.NewTime(tNano.Add(-time.Hour).Truncate(time.Second))
	mine := metav1.NewTime(tNano.Add(-time.Minute).Truncate(time.Second))
	now := tNano.Truncate(time.Second)
	ready := func(s v1.ConditionStatus, at metav1.Time) *v1.PodCondition {
		return &v1.PodCondition{Type: v1.PodReady, Status: s, LastTransitionTime: at}
	}
	for _, tc := range []struct {
		name           string
		condition, old *v1.PodCondition
		want           time.Time // zero: no condition
	}{
		{name: "should do nothing if no corresponding condition"},
		{name: "should update last transition time if no old condition", condition: ready(v1.ConditionTrue, metav1.Time{}), want: now},
		{name: "should update last transition time if condition is changed",
			condition: ready(v1.ConditionTrue, metav1.Time{}), old: ready(v1.ConditionFalse, old), want: now},
		{name: "should keep last transition time if condition is not changed",
			condition: ready(v1.ConditionFalse, metav1.Time{}), old: ready(v1.ConditionFalse, old), want: old.Time},
		{name: "nodekit: a changed condition keeps the time its caller set",
			condition: ready(v1.ConditionTrue, mine), old: ready(v1.ConditionFalse, old), want: mine.Time},
		{name: "nodekit: a changed condition carrying the old time gets now",
			condition: ready(v1.ConditionTrue, old), old: ready(v1.ConditionFalse, old), want: now},
		{name: "nodekit: an unchanged condition keeps the old time over the caller's",
			condition: ready(v1.ConditionFalse, mine), old: ready(v1.ConditionFalse, old), want: old.Time},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := fakeClockManager(t)
			pod := upstreamPod()
			if tc.old != nil {
				pod.Status.Conditions = []v1.PodCondition{*tc.old}
			}
			var s v1.PodStatus
			if tc.condition != nil {
				s.Conditions = []v1.PodCondition{*tc.condition}
			}
			m.SetPodStatus(pod, s)
			got := cachedStatus(t, m, pod)
			if tc.want.IsZero() {
				require.Empty(t, got.Conditions)
				return
			}
			requireTime(t, tc.want, readyTransition(t, got))
		})
	}
}

// TestStatusEquality: container statuses in another order, another's
// condition and resource claim statuses are no change.
func TestStatusEquality(t *testing.T) {
	var containers []v1.Container
	var statuses []v1.ContainerStatus
	for i := range 10 {
		name := fmt.Sprintf("container%d", i)
		containers = append(containers, v1.Container{Name: name})
		statuses = append(statuses, v1.ContainerStatus{Name: name})
	}
	pod := upstreamPod()
	pod.Spec.InitContainers = containers
	status := v1.PodStatus{ContainerStatuses: statuses, InitContainerStatuses: statuses, EphemeralContainerStatuses: statuses}
	m, _ := fakeClockManager(t)
	m.SetPodStatus(pod, status)
	require.Equal(t, 1, updates(t, m))
	for i := range 10 {
		shuffled := status
		for _, list := range []*[]v1.ContainerStatus{&shuffled.ContainerStatuses, &shuffled.InitContainerStatuses, &shuffled.EphemeralContainerStatuses} {
			*list = append(slices.Clone(statuses[i:]), statuses[:i]...)
			slices.Reverse(*list)
		}
		m.SetPodStatus(pod, shuffled)
		require.Equal(t, 0, updates(t, m), "order of container statuses should not affect equality")
	}

	status.Conditions = []v1.PodCondition{{Type: "www.example.com/feature", Status: v1.ConditionTrue}}
	m.SetPodStatus(pod, status)
	status.Conditions = []v1.PodCondition{{Type: "www.example.com/feature", Status: v1.ConditionFalse}}
	m.SetPodStatus(pod, status)
	require.Equal(t, 0, updates(t, m), "differences in pod conditions not owned by the kubelet are no change")

	claim := "claim"
	status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "my-claim", ResourceClaimName: &claim}}
	status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "claim",
		RequestMappings: []v1.ContainerExtendedResourceRequest{{RequestName: "request", ContainerName: "c", ResourceName: "example.com/gpu"}}}
	status.NodeAllocatableResourceClaimStatuses = []v1.NodeAllocatableResourceClaimStatus{{ResourceClaimName: "my-claim", Containers: []string{"ctr0"}}}
	m.SetPodStatus(pod, status)
	require.Equal(t, 0, updates(t, m), "differences in resource claim statuses are no change")

	status.Conditions = []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue}}
	m.SetPodStatus(pod, status)
	require.Equal(t, 1, updates(t, m), "nodekit: DisruptionTarget, which the kubelet shares, is one")
}

func TestStatusNormalizationEnforcesMaxBytes(t *testing.T) {
	var statuses []v1.ContainerStatus
	for i := range 48 {
		statuses = append(statuses, v1.ContainerStatus{Name: fmt.Sprintf("container%d", i),
			LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: strings.Repeat("abcdefgh", 24+i%3)}}})
	}
	m, _ := fakeClockManager(t)
	pod := upstreamPod()
	m.SetPodStatus(pod, v1.PodStatus{InitContainerStatuses: statuses[:16], ContainerStatuses: statuses[16:32], EphemeralContainerStatuses: statuses[32:]})
	count := 0
	for _, s := range cachedStatus(t, m, pod).InitContainerStatuses {
		l := len(s.LastTerminationState.Terminated.Message)
		require.True(t, l >= 192 && l <= 256, "container message had length %d", l)
		count += l
	}
	require.LessOrEqual(t, count, maxTerminationMessages)

	// nodekit: with containers in the spec, each message gets its share.
	pod = upstreamPod()
	pod.UID = "shares"
	pod.Spec.Containers = []v1.Container{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}}
	long := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: strings.Repeat("x", 4096)}}
	status := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: long, LastTerminationState: long}}}
	m.SetPodStatus(pod, status)
	got := cachedStatus(t, m, pod).ContainerStatuses[0]
	require.Len(t, got.State.Terminated.Message, 3072)
	require.Len(t, got.LastTerminationState.Terminated.Message, 3072)
	require.Len(t, long.Terminated.Message, 4096, "the caller's status is not changed")
}

func TestStatusNormalizeTimeStamp(t *testing.T) {
	now := metav1.NewTime(tNano)
	states := func(at metav1.Time) []v1.ContainerStatus {
		return []v1.ContainerStatus{
			{Name: "a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: at}}},
			{Name: "b", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{StartedAt: at, FinishedAt: at}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{StartedAt: at, FinishedAt: at}}},
		}
	}
	status := v1.PodStatus{StartTime: &now, ContainerStatuses: states(now), InitContainerStatuses: states(now), EphemeralContainerStatuses: states(now),
		Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now}}}
	m, _ := fakeClockManager(t)
	pod := upstreamPod()
	m.SetPodStatus(pod, status)
	sec := metav1.NewTime(tNano.Truncate(time.Second))
	want := v1.PodStatus{StartTime: &sec, ContainerStatuses: states(sec), InitContainerStatuses: states(sec), EphemeralContainerStatuses: states(sec),
		Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastProbeTime: sec, LastTransitionTime: sec}}}
	require.Equal(t, want, cachedStatus(t, m, pod))
	require.Equal(t, tNano, status.ContainerStatuses[0].State.Running.StartedAt.Time, "the caller's status is not changed")
	require.Equal(t, tNano, status.StartTime.Time)
}

// TestSetContainerReadiness: on the cached status, whatever the container's
// state; the pod's Ready condition follows.
func TestSetContainerReadiness(t *testing.T) {
	const id1, id2 = "test://1", "test://2"
	pod := upstreamPod()
	pod.Spec.Containers = []v1.Container{{Name: "c1"}, {Name: "c2"}}
	status := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "c1", ContainerID: id1}, {Name: "c2", ContainerID: id2}},
		Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}}}
	m, _ := fakeClockManager(t)
	verify := func(step string, c1, c2, podReady bool) {
		t.Helper()
		s := cachedStatus(t, m, pod)
		require.Equal(t, []bool{c1, c2}, []bool{s.ContainerStatuses[0].Ready, s.ContainerStatuses[1].Ready}, step)
		require.Equal(t, v1.PodReady, s.Conditions[0].Type, step)
		require.Equal(t, podReady, s.Conditions[0].Status == v1.ConditionTrue, step)
	}

	m.SetContainerReadiness(pod.UID, id1, true)
	require.Equal(t, 0, updates(t, m), "setting readiness before status should fail")
	_, ok := m.PodStatus(pod.UID)
	require.False(t, ok)

	m.SetPodStatus(pod, status)
	require.Equal(t, 1, updates(t, m))
	verify("initial", false, false, false)

	m.SetContainerReadiness(pod.UID, id1, false)
	require.Equal(t, 0, updates(t, m))
	verify("unchanged", false, false, false)

	m.SetContainerReadiness(pod.UID, id1, true)
	require.Equal(t, 1, updates(t, m))
	verify("c1 ready", true, false, false)

	m.SetContainerReadiness(pod.UID, id2, true)
	require.Equal(t, 1, updates(t, m))
	verify("all ready", true, true, true)
	cr := FindCondition(cachedStatus(t, m, pod).Conditions, v1.ContainersReady)
	require.NotNil(t, cr, "nodekit: a missing ContainersReady is added, as upstream's updateConditionFunc does")
	require.Equal(t, v1.ConditionTrue, cr.Status)

	m.SetContainerReadiness(pod.UID, "test://foo", true)
	require.Equal(t, 0, updates(t, m), "non-existent container")
	verify("ignore non-existent", true, true, true)
}

func TestSetContainerStartup(t *testing.T) {
	const id1, id2 = "test://1", "test://2"
	pod := upstreamPod()
	pod.Spec.Containers = []v1.Container{{Name: "c1"}, {Name: "c2"}}
	status := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "c1", ContainerID: id1}, {Name: "c2", ContainerID: id2}},
		Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}}}
	m, _ := fakeClockManager(t)
	verify := func(step string, c1, c2 bool) {
		t.Helper()
		s := cachedStatus(t, m, pod)
		started := func(cs v1.ContainerStatus) bool { return cs.Started != nil && *cs.Started }
		require.Equal(t, []bool{c1, c2}, []bool{started(s.ContainerStatuses[0]), started(s.ContainerStatuses[1])}, step)
	}

	m.SetContainerStartup(pod.UID, id1, true)
	require.Equal(t, 0, updates(t, m), "setting startup before status should fail")
	_, ok := m.PodStatus(pod.UID)
	require.False(t, ok)

	m.SetPodStatus(pod, status)
	require.Equal(t, 1, updates(t, m))
	verify("initial", false, false)

	m.SetContainerStartup(pod.UID, id1, false)
	require.Equal(t, 1, updates(t, m), "started nil to false")
	verify("unchanged", false, false)

	m.SetContainerStartup(pod.UID, id1, true)
	require.Equal(t, 1, updates(t, m))
	verify("c1 started", true, false)

	m.SetContainerStartup(pod.UID, id2, true)
	require.Equal(t, 1, updates(t, m))
	verify("all started", true, true)

	m.SetContainerStartup(pod.UID, "test://foo", true)
	require.Equal(t, 0, updates(t, m))
	verify("ignore non-existent", true, true)
}

// TestProbeResultsOutlivingTheirContainer: nodekit's deliberate difference
// from upstream: a ready or started result for a container the cached
// status shows waiting or terminated is stale and ignored; a not-ready one
// is recorded.
func TestProbeResultsOutlivingTheirContainer(t *testing.T) {
	pod := upstreamPod()
	pod.Spec.Containers = []v1.Container{{Name: "a"}, {Name: "b"}}
	m, _ := fakeClockManager(t)
	m.SetPodStatus(pod, v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
		{Name: "a", ContainerID: "test://a", Ready: true, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}},
		{Name: "b", ContainerID: "test://b", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}})
	require.Equal(t, 1, updates(t, m))
	m.SetContainerReadiness(pod.UID, "test://b", true)
	m.SetContainerStartup(pod.UID, "test://b", true)
	require.Equal(t, 0, updates(t, m))
	m.SetContainerReadiness(pod.UID, "test://a", false)
	require.Equal(t, 1, updates(t, m))
	require.False(t, cachedStatus(t, m, pod).ContainerStatuses[0].Ready)
}

// TestReadinessAfterATerminalPhase: recorded, as upstream; the pod stays
// unready.
func TestReadinessAfterATerminalPhase(t *testing.T) {
	pod := upstreamPod()
	pod.Spec.Containers = []v1.Container{{Name: "a"}}
	m, _ := fakeClockManager(t)
	m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{
		{Name: "a", ContainerID: "test://a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}})
	m.SetContainerReadiness(pod.UID, "test://a", true)
	s := cachedStatus(t, m, pod)
	require.True(t, s.ContainerStatuses[0].Ready)
	require.Equal(t, []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "PodFailed"},
		{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: "PodFailed"}}, typeStatusReason(s.Conditions))
}

// TestContainerTerminationMetric: kubelet_terminated_containers_total
// counts each container once as it turns terminated, per pod.
func TestContainerTerminationMetric(t *testing.T) {
	m := newManager(t, Config{Registerer: prometheus.NewRegistry()})
	counterValue := func(labels ...string) float64 {
		var out dto.Metric
		require.NoError(t, m.terminated.WithLabelValues(labels...).Write(&out))
		return out.GetCounter().GetValue()
	}
	terminated := func(name string, code int32, reason string) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "metric-pod", Namespace: "test", UID: "12345"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "test-container"}}}}
	m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{
		{Name: "test-container", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}})
	m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{terminated("test-container", 0, "Completed")}})
	require.Equal(t, 1.0, counterValue("container", "0", "Completed"))

	errorPod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "error-pod", Namespace: "test", UID: "67890"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "error-container"}}}}
	m.SetPodStatus(errorPod, v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{terminated("error-container", 1, "Error")}})
	require.Equal(t, 1.0, counterValue("container", "1", "Error"))
	require.Equal(t, 1.0, counterValue("container", "0", "Completed"))
}

// TestSetPodStatusUnchangedAllocatesOnce: a normalized status equal to the
// cached one costs its encoding only (podsyncer writes one per sync).
func TestSetPodStatusUnchangedAllocatesOnce(t *testing.T) {
	m, _ := fakeClockManager(t)
	pod := upstreamPod()
	pod.Spec.Containers = []v1.Container{{Name: "a"}, {Name: "b"}}
	at := metav1.NewTime(tNano.Truncate(time.Second))
	s := v1.PodStatus{Phase: v1.PodRunning, StartTime: &at, Conditions: []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: at}, {Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: at}},
		ContainerStatuses: []v1.ContainerStatus{{Name: "a", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: at}}},
			{Name: "b", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: at}}}}}
	m.SetPodStatus(pod, s)
	require.LessOrEqual(t, testing.AllocsPerRun(100, func() { m.SetPodStatus(pod, s) }), 1.0)
}
