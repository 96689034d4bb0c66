package podstatus

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testclock "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/kubetypes"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func apiPod(uid types.UID) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: uid},
		Spec:   v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "app"}}},
		Status: v1.PodStatus{Phase: v1.PodPending, QOSClass: v1.PodQOSBestEffort}}
}

func runningStatus(ready bool, id string) v1.PodStatus {
	r := v1.ConditionFalse
	if ready {
		r = v1.ConditionTrue
	}
	return v1.PodStatus{Phase: v1.PodRunning, QOSClass: v1.PodQOSBestEffort, HostIP: "192.0.2.2",
		Conditions: []v1.PodCondition{cond(v1.PodReady, r), cond(v1.ContainersReady, r), cond(v1.PodInitialized, v1.ConditionTrue)},
		ContainerStatuses: []v1.ContainerStatus{{Name: "app", Ready: ready, ContainerID: id,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: t0}}}}}
}

func newManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	m, err := New(cfg)
	require.NoError(t, err)
	return m
}

func getPod(t *testing.T, c *fake.Clientset) *v1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods("ns").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	return p
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{{Workers: -1}, {ResyncPeriod: -time.Second}, {RetryBase: time.Minute, RetryMax: time.Second}} {
		_, err := New(cfg)
		assert.Error(t, err, "%+v", cfg)
	}
}

func TestSyncWritesOnlyWhatTheKubeletOwns(t *testing.T) {
	ctx := context.Background()
	pod := apiPod("u1")
	pod.Status.Conditions = []v1.PodCondition{cond("example.com/gate", v1.ConditionFalse), cond(v1.DisruptionTarget, v1.ConditionTrue)}
	pod.Status.NominatedNodeName = "n1"
	c := fake.NewClientset(pod)
	m := newManager(t, Config{Client: clientset.Wrap(c)})
	m.SetPodStatus(pod, runningStatus(true, "containerd://a"))
	require.NoError(t, m.Sync(ctx, "u1"))
	got := getPod(t, c)
	assert.Equal(t, v1.PodRunning, got.Status.Phase)
	assert.Equal(t, "192.0.2.2", got.Status.HostIP)
	assert.Equal(t, "n1", got.Status.NominatedNodeName)
	assert.Equal(t, map[v1.PodConditionType]v1.ConditionStatus{"example.com/gate": v1.ConditionFalse, v1.DisruptionTarget: v1.ConditionTrue,
		v1.PodReady: v1.ConditionTrue, v1.ContainersReady: v1.ConditionTrue, v1.PodInitialized: v1.ConditionTrue}, condTypes(got.Status.Conditions))
	assert.Equal(t, 0, m.Pending())

	// Nothing changed: a second sync reads but does not patch.
	c.ClearActions()
	require.NoError(t, m.Sync(ctx, "u1"))
	for _, a := range c.Actions() {
		assert.NotEqual(t, "patch", a.GetVerb())
	}
}

type observer struct {
	written []v1.PodPhase
	forgot  []types.UID
}

func (o *observer) StatusWritten(pod *v1.Pod) { o.written = append(o.written, pod.Status.Phase) }
func (o *observer) Forget(uid types.UID)      { o.forgot = append(o.forgot, uid) }

func TestObserverSeesWritesAndForgets(t *testing.T) {
	ctx := context.Background()
	pod := apiPod("u1")
	c := fake.NewClientset(pod)
	o := &observer{}
	m := newManager(t, Config{Client: clientset.Wrap(c), Observer: o})
	m.SetPodStatus(pod, runningStatus(true, "containerd://a"))
	require.NoError(t, m.Sync(ctx, "u1"))
	require.NoError(t, m.Sync(ctx, "u1")) // unchanged: no patch
	assert.Equal(t, []v1.PodPhase{v1.PodRunning}, o.written, "the pod the API returned")
	m.RemoveOrphans(func(types.UID) bool { return false })
	assert.Equal(t, []types.UID{"u1"}, o.forgot)
}

func TestSyncNeverWritesARecreatedPod(t *testing.T) {
	ctx := context.Background()
	old := apiPod("old")
	c := fake.NewClientset(apiPod("new")) // deleted and recreated under the same name
	m := newManager(t, Config{Client: clientset.Wrap(c)})
	m.SetPodStatus(old, runningStatus(true, "containerd://a"))
	require.NoError(t, m.Sync(ctx, "old"))
	assert.Equal(t, v1.PodPending, getPod(t, c).Status.Phase)
	_, ok := m.PodStatus("old")
	assert.False(t, ok, "the old pod's status is forgotten")
}

func TestTerminalPhaseIsFinal(t *testing.T) {
	ctx := context.Background()
	pod := apiPod("u1")
	c := fake.NewClientset(pod)
	m := newManager(t, Config{Client: clientset.Wrap(c)})
	done := runningStatus(false, "containerd://a")
	done.Phase, done.Reason = v1.PodFailed, "DeadlineExceeded"
	m.SetPodStatus(pod, done)
	m.SetPodStatus(pod, runningStatus(true, "containerd://a"))
	s, _ := m.PodStatus("u1")
	assert.Equal(t, v1.PodFailed, s.Phase, "the cache keeps the terminal phase")
	assert.Equal(t, "DeadlineExceeded", s.Reason)
	require.NoError(t, m.Sync(ctx, "u1"))
	assert.Equal(t, v1.PodFailed, getPod(t, c).Status.Phase)

	// Found terminal on the API server (another writer): never reverted.
	other := apiPod("u2")
	other.Name, other.Status.Phase = "done", v1.PodSucceeded
	require.NoError(t, c.Tracker().Add(other))
	m.SetPodStatus(other, runningStatus(true, "containerd://b"))
	require.NoError(t, m.Sync(ctx, "u2"))
	got, err := c.CoreV1().Pods("ns").Get(ctx, "done", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.PodSucceeded, got.Status.Phase)
	assert.Equal(t, v1.ConditionFalse, FindCondition(got.Status.Conditions, v1.PodReady).Status)
}

func TestFinishWritesTheFinalStatusThenDeletes(t *testing.T) {
	ctx := context.Background()
	pod := apiPod("u1")
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	c := fake.NewClientset(pod)
	var running atomic.Bool
	running.Store(true)
	m := newManager(t, Config{Client: clientset.Wrap(c), CouldHaveRunningContainers: func(types.UID) bool { return running.Load() }})
	final := runningStatus(false, "containerd://a")
	final.Phase = v1.PodSucceeded
	m.SetPodStatus(pod, final)
	m.Finish(pod)
	require.NoError(t, m.Sync(ctx, "u1"))
	assert.Equal(t, v1.PodPending, getPod(t, c).Status.Phase, "no terminal phase while a container could run")
	assert.Equal(t, 1, m.Pending())

	running.Store(false)
	c.ClearActions()
	require.NoError(t, m.Sync(ctx, "u1"))
	var verbs []string
	for _, a := range c.Actions() {
		verbs = append(verbs, a.GetVerb())
	}
	assert.Equal(t, []string{"get", "patch", "delete"}, verbs)
	del := c.Actions()[2].(k8stesting.DeleteAction)
	require.NotNil(t, del.GetDeleteOptions().Preconditions)
	assert.Equal(t, types.UID("u1"), *del.GetDeleteOptions().Preconditions.UID)
	assert.Equal(t, int64(0), *del.GetDeleteOptions().GracePeriodSeconds)
	assert.Equal(t, 0, m.Pending())
	_, ok := m.PodStatus("u1")
	assert.False(t, ok)
}

func TestStaticPodStatusGoesToItsMirror(t *testing.T) {
	ctx := context.Background()
	static := apiPod("static-uid")
	static.Annotations = map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource,
		kubetypes.ConfigHashAnnotationKey: "static-uid"}
	c := fake.NewClientset()
	m := newManager(t, Config{Client: clientset.Wrap(c)})
	m.SetPodStatus(static, runningStatus(true, "containerd://a"))
	require.NoError(t, m.Sync(ctx, "static-uid"))
	assert.Equal(t, 1, m.Pending(), "kept until the mirror exists")

	m.RemoveOrphans(func(types.UID) bool { return true })
	assert.Equal(t, 1, m.Pending(), "kept while known")
	require.NoError(t, m.Sync(ctx, "static-uid"))
	mirror := apiPod("mirror-uid")
	mirror.Annotations = map[string]string{kubetypes.ConfigMirrorAnnotationKey: "static-uid"}
	require.NoError(t, c.Tracker().Add(mirror))
	require.NoError(t, m.Sync(ctx, "static-uid"))
	assert.Equal(t, v1.PodRunning, getPod(t, c).Status.Phase)
	assert.Equal(t, 0, m.Pending())

	// Removed from its source before a mirror existed: forgotten anyway.
	gone := apiPod("gone-uid")
	gone.Name, gone.Annotations = "gone", static.Annotations
	m.SetPodStatus(gone, runningStatus(true, "containerd://b"))
	m.RemoveOrphans(func(uid types.UID) bool { return uid != "gone-uid" })
	_, ok := m.PodStatus("gone-uid")
	assert.False(t, ok)
}

func TestContainerReadinessWithoutAPodSync(t *testing.T) {
	pod := apiPod("u1")
	pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/gate"}}
	m := newManager(t, Config{Clock: testclock.NewFakeClock(t1.Time)})
	m.SetPodStatus(pod, runningStatus(false, "containerd://a"))
	m.SetContainerReadiness("u1", "containerd://a", true)
	s, _ := m.PodStatus("u1")
	assert.True(t, s.ContainerStatuses[0].Ready)
	cr := FindCondition(s.Conditions, v1.ContainersReady)
	assert.Equal(t, v1.ConditionTrue, cr.Status)
	assert.Equal(t, t1, cr.LastTransitionTime)
	ready := FindCondition(s.Conditions, v1.PodReady)
	assert.Equal(t, v1.ConditionFalse, ready.Status, "held by the readiness gate")
	assert.Equal(t, "ReadinessGatesNotReady", ready.Reason)

	// The pod's own status, as it was before the readiness change, is a
	// change again (the cached status moved on).
	m.SetPodStatus(pod, runningStatus(false, "containerd://a"))
	s, _ = m.PodStatus("u1")
	assert.False(t, s.ContainerStatuses[0].Ready)
	m.SetContainerReadiness("u1", "containerd://a", true)

	m.SetContainerReadiness("u1", "containerd://other", false) // unknown container: nothing
	m.SetContainerStartup("u1", "containerd://a", true)
	s, _ = m.PodStatus("u1")
	assert.True(t, s.ContainerStatuses[0].Ready)
	assert.True(t, *s.ContainerStatuses[0].Started)
}

// TestRunQueuesWhileTheAPIServerIsAway: writes fail for a while; the latest
// status lands once the API server answers again, retried on the fake clock.
func TestRunQueuesWhileTheAPIServerIsAway(t *testing.T) {
	pod := apiPod("u1")
	c := fake.NewClientset(pod)
	var down atomic.Bool
	down.Store(true)
	var patches atomic.Int32
	c.PrependReactor("*", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if down.Load() {
			return true, nil, errors.New("connection refused")
		}
		if a.GetVerb() == "patch" {
			patches.Add(1)
		}
		return false, nil, nil
	})
	clk := testclock.NewFakeClock(t0.Time)
	m := newManager(t, Config{Client: clientset.Wrap(c), Clock: clk, Workers: 2})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	m.SetPodStatus(pod, runningStatus(false, "containerd://a"))
	m.SetPodStatus(pod, runningStatus(true, "containerd://a"))
	for i := 0; i < 5; i++ {
		clk.Step(DefaultRetryMax)
	}
	assert.Equal(t, 1, m.Pending())
	down.Store(false)
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) {
			clk.Step(DefaultRetryMax)
			return m.Pending() == 0, nil
		}))
	got := getPod(t, c)
	assert.Equal(t, v1.PodRunning, got.Status.Phase)
	assert.True(t, got.Status.ContainerStatuses[0].Ready, "the latest status wins")
	assert.Equal(t, int32(1), patches.Load(), "one write for two statuses")
	cancel()
	require.NoError(t, <-done)
}

// TestHeldTerminalPhaseLandsOnTheNextSet: a terminal phase held while a
// container could run is written as soon as the agent sets the status
// again once nothing runs, without waiting for the resync.
func TestHeldTerminalPhaseLandsOnTheNextSet(t *testing.T) {
	pod := apiPod("u1")
	c := fake.NewClientset(pod)
	var running atomic.Bool
	running.Store(true)
	clk := testclock.NewFakeClock(t0.Time)
	m := newManager(t, Config{Client: clientset.Wrap(c), Clock: clk, CouldHaveRunningContainers: func(types.UID) bool { return running.Load() }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	final := runningStatus(false, "containerd://a")
	final.Phase = v1.PodSucceeded
	m.SetPodStatus(pod, final)
	require.Eventually(t, func() bool { return c.Actions() != nil && len(c.Actions()) >= 2 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, v1.PodPending, getPod(t, c).Status.Phase, "held")
	running.Store(false)
	m.SetPodStatus(pod, final) // the same status, set after the containers stopped
	require.Eventually(t, func() bool { return getPod(t, c).Status.Phase == v1.PodSucceeded }, 10*time.Second, time.Millisecond,
		"written without a clock step")
}

// TestFinishForgetsAPodTheAuthorizerNoLongerShows: the node authorizer
// answers Forbidden for a pod that is gone; a finished deletion stops there.
func TestFinishForgetsAPodTheAuthorizerNoLongerShows(t *testing.T) {
	pod := apiPod("u1")
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	c := fake.NewClientset()
	c.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(v1.Resource("pods"), "web", errors.New("no relationship found between node 'n1' and this object"))
	})
	m := newManager(t, Config{Client: clientset.Wrap(c)})
	m.SetPodStatus(pod, runningStatus(false, "containerd://a"))
	m.Finish(pod)
	require.NoError(t, m.Sync(context.Background(), "u1"))
	_, ok := m.PodStatus("u1")
	assert.False(t, ok)
	assert.Equal(t, 0, m.Pending())
}

func TestTerminatedContainersAreCountedOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(Config{Registerer: reg})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}}
	terminated := func(code int32, reason string) v1.PodStatus {
		return v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{{Name: "c",
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}}}
	}
	m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "c",
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}})
	m.SetPodStatus(pod, terminated(139, "Error"))
	st := terminated(139, "Error")
	st.Message = "a later change of the same terminated container"
	m.SetPodStatus(pod, st)
	all, err := reg.Gather()
	require.NoError(t, err)
	families := slices.DeleteFunc(all, func(mf *dto.MetricFamily) bool { return mf.GetName() != "kubelet_terminated_containers_total" })
	require.Len(t, families, 1)
	require.Len(t, families[0].Metric, 1)
	labels := map[string]string{}
	for _, l := range families[0].Metric[0].Label {
		labels[l.GetName()] = l.GetValue()
	}
	assert.Equal(t, map[string]string{"container_type": "container", "exit_code": "139", "reason": "Error"}, labels)
	assert.Equal(t, 1.0, families[0].Metric[0].Counter.GetValue(), "counted once")
}

// kubelet_pod_status_sync_duration_seconds: from the status change to the
// API server having it, on the injected clock.
func TestStatusSyncDuration(t *testing.T) {
	reg := prometheus.NewRegistry()
	clk := testclock.NewFakeClock(time.Unix(1000, 0))
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}}
	c := fake.NewClientset(pod)
	m, err := New(Config{Client: clientset.Wrap(c), Registerer: reg, Clock: clk})
	require.NoError(t, err)
	m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning})
	clk.Step(1500 * time.Millisecond)
	require.NoError(t, m.Sync(context.Background(), "u1"))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubelet_pod_status_sync_duration_seconds [ALPHA] Duration in seconds to sync a pod status update. Measures time from detection of a change to pod status until the API is successfully updated for that pod, even if multiple intevening changes to pod status occur.
# TYPE kubelet_pod_status_sync_duration_seconds histogram
kubelet_pod_status_sync_duration_seconds_bucket{le="0.01"} 0
kubelet_pod_status_sync_duration_seconds_bucket{le="0.05"} 0
kubelet_pod_status_sync_duration_seconds_bucket{le="0.1"} 0
kubelet_pod_status_sync_duration_seconds_bucket{le="0.5"} 0
kubelet_pod_status_sync_duration_seconds_bucket{le="1"} 0
kubelet_pod_status_sync_duration_seconds_bucket{le="5"} 1
kubelet_pod_status_sync_duration_seconds_bucket{le="10"} 1
kubelet_pod_status_sync_duration_seconds_bucket{le="20"} 1
kubelet_pod_status_sync_duration_seconds_bucket{le="30"} 1
kubelet_pod_status_sync_duration_seconds_bucket{le="45"} 1
kubelet_pod_status_sync_duration_seconds_bucket{le="60"} 1
kubelet_pod_status_sync_duration_seconds_bucket{le="+Inf"} 1
kubelet_pod_status_sync_duration_seconds_sum 1.5
kubelet_pod_status_sync_duration_seconds_count 1
`), "kubelet_pod_status_sync_duration_seconds"))
}
