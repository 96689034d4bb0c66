package prober

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestUpdatePodStatus(t *testing.T) {
	longAgo := epoch.Add(-time.Hour) // before the manager started: a kubelet restart
	cases := []struct {
		name             string
		liveness         *v1.Probe
		readiness        *v1.Probe
		startup          *v1.Probe
		startedAt        time.Time
		notRunning       bool
		inStarted        *bool
		podReady         bool
		readinessResult  *Result
		startupResult    *Result
		wantStarted      bool
		wantReady        bool
		wantTriggerReady bool
	}{
		{name: "no probes: started and ready", startedAt: epoch, wantStarted: true, wantReady: true},
		{name: "only liveness: ready", liveness: execProbe("l"), startedAt: epoch, wantStarted: true, wantReady: true},
		{name: "readiness without result", readiness: execProbe("r"), startedAt: epoch, wantStarted: true, wantTriggerReady: true},
		{name: "readiness failed", readiness: execProbe("r"), startedAt: epoch, readinessResult: ptr(Failure), wantStarted: true, wantTriggerReady: true},
		{name: "readiness succeeded", readiness: execProbe("r"), startedAt: epoch, readinessResult: ptr(Success), wantStarted: true, wantReady: true},
		{name: "startup without result", startup: execProbe("s"), startedAt: epoch},
		{name: "startup failed", startup: execProbe("s"), startedAt: epoch, startupResult: ptr(Failure)},
		{name: "startup succeeded", startup: execProbe("s"), startedAt: epoch, startupResult: ptr(Success), wantStarted: true, wantReady: true},
		{name: "already started per status", startup: execProbe("s"), startedAt: epoch, inStarted: ptr(true), wantStarted: true, wantReady: true},
		{name: "not running", notRunning: true},
		{name: "restart: no readiness result, pod was ready", readiness: execProbe("r"), startedAt: longAgo, podReady: true, wantStarted: true, wantReady: true, wantTriggerReady: true},
		{name: "restart: pod was not ready", readiness: execProbe("r"), startedAt: longAgo, wantStarted: true, wantTriggerReady: true},
		{name: "restart: readiness failed since", readiness: execProbe("r"), startedAt: longAgo, podReady: true, readinessResult: ptr(Failure), wantStarted: true, wantTriggerReady: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.Rand = func() float64 { return 0.5 } })
			pod := testPod("p", tc.liveness, tc.readiness, tc.startup)
			if tc.podReady {
				pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
			}
			require.NoError(t, e.m.AddPod(pod))
			if tc.readinessResult != nil {
				e.m.results[Readiness].set(cid, *tc.readinessResult, pod.UID)
			}
			if tc.startupResult != nil {
				e.m.results[Startup].set(cid, *tc.startupResult, pod.UID)
			}
			st := runningStatus(cid, tc.startedAt)
			if tc.notRunning {
				st.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
			}
			st.ContainerStatuses[0].Started = tc.inStarted
			e.m.UpdatePodStatus(e.ctx, pod, st)
			c := st.ContainerStatuses[0]
			require.Equal(t, tc.wantStarted, *c.Started, "started")
			require.Equal(t, tc.wantReady, c.Ready, "ready")
			// A triggered readiness probe runs now instead of mid-period.
			require.Equal(t, tc.wantTriggerReady, e.m.RunOnce(e.ctx) == 1, "readiness triggered")
		})
	}
}

func TestUpdatePodStatusInitContainers(t *testing.T) {
	e := newEnv(t)
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "p"}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "setup"}, {Name: "sidecar", RestartPolicy: &always, ReadinessProbe: execProbe("r")}},
		Containers:     []v1.Container{{Name: "app"}},
	}}
	require.NoError(t, e.m.AddPod(pod))
	require.Equal(t, 1, e.m.Probes(), "the sidecar's probe")
	st := &v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{
		{Name: "setup", ContainerID: "crisim://setup", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}},
		{Name: "sidecar", ContainerID: "crisim://side", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(epoch)}}},
	}}
	e.m.UpdatePodStatus(e.ctx, pod, st)
	require.True(t, st.InitContainerStatuses[0].Ready, "init container that exited 0")
	require.False(t, st.InitContainerStatuses[1].Ready, "sidecar before its readiness probe")
	e.m.RunOnce(e.ctx)
	require.Equal(t, "Success", e.result(Readiness, "crisim://side"))
	e.m.UpdatePodStatus(e.ctx, pod, st)
	require.True(t, st.InitContainerStatuses[1].Ready)
}
