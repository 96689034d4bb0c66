package podstatus

// The upstream kubelet's status manager cases (pkg/kubelet/status,
// status_manager_test.go) on TerminatePod, re-expressed through the
// Manager's API, each named after its upstream test.

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// unknownState is the state TerminatePod gives a container whose end was
// never seen.
var unknownState = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
	Reason: ReasonContainerStatusUnknown, Message: messageContainerStatusUnknown, ExitCode: 137}}

func terminatedState(reason string, code int32) v1.ContainerState {
	return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: reason, ExitCode: code}}
}

func waitingState(reason string) v1.ContainerState {
	return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}
}

// terminatePodCase is upstream's TestTerminatePod and TestTerminatePodWaiting:
// a Failed status is cached, then TerminatePod gets a stale pod showing
// everything running; lastInit and lastApp are the third init and app
// containers' cached states.
func terminatePodCase(t *testing.T, lastInit, lastApp v1.ContainerState) (first, got v1.PodStatus) {
	t.Helper()
	m, _ := fakeClockManager(t)
	pod := upstreamPod()
	pod.Spec.InitContainers = []v1.Container{{Name: "init-test-1"}, {Name: "init-test-2"}, {Name: "init-test-3"}}
	pod.Spec.Containers = []v1.Container{{Name: "test-1"}, {Name: "test-2"}, {Name: "test-3"}}
	first = messageStatus("first")
	first.Phase = v1.PodFailed
	first.InitContainerStatuses = []v1.ContainerStatus{{Name: "init-test-1"},
		{Name: "init-test-2", State: terminatedState("InitTest", 0)}, {Name: "init-test-3", State: lastInit}}
	first.ContainerStatuses = []v1.ContainerStatus{{Name: "test-1"},
		{Name: "test-2", State: terminatedState("Test", 2)}, {Name: "test-3", State: lastApp}}
	m.SetPodStatus(pod, first)

	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	pod.Status = messageStatus("stale")
	pod.Status.Phase = v1.PodRunning
	pod.Status.InitContainerStatuses = []v1.ContainerStatus{{Name: "test-1"},
		{Name: "init-test-2", State: terminatedState("InitTest", 0)}, {Name: "init-test-3", State: terminatedState("InitTest", 0)}}
	pod.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "test-1", State: running}, {Name: "test-2", State: running}, {Name: "test-3", State: running}}
	m.TerminatePod(pod)
	got = cachedStatus(t, m, pod)
	require.Equal(t, first.Phase, got.Phase, "the cached status is kept")
	require.Equal(t, first.Message, got.Message)
	return first, got
}

func TestTerminatePod(t *testing.T) {
	first, got := terminatePodCase(t, terminatedState("InitTest", 3), terminatedState("Test", 0))
	require.Equal(t, unknownState, got.InitContainerStatuses[0].State, "not seen ending: unknown")
	require.Equal(t, first.InitContainerStatuses[1].State, got.InitContainerStatuses[1].State, "terminated: kept")
	require.Equal(t, first.InitContainerStatuses[2].State, got.InitContainerStatuses[2].State)
	require.Equal(t, unknownState, got.ContainerStatuses[0].State)
	require.Equal(t, first.ContainerStatuses[1].State, got.ContainerStatuses[1].State)
	require.Equal(t, first.ContainerStatuses[2].State, got.ContainerStatuses[2].State)
}

func TestTerminatePodWaiting(t *testing.T) {
	first, got := terminatePodCase(t, waitingState("InitTest"), waitingState("Test"))
	require.Equal(t, unknownState, got.InitContainerStatuses[0].State)
	require.Equal(t, first.InitContainerStatuses[1].State, got.InitContainerStatuses[1].State)
	require.Equal(t, first.InitContainerStatuses[2].State, got.InitContainerStatuses[2].State, "never started: still waiting")
	require.Equal(t, unknownState, got.ContainerStatuses[0].State)
	require.Equal(t, first.ContainerStatuses[1].State, got.ContainerStatuses[1].State)
	require.Equal(t, unknownState, got.ContainerStatuses[2].State, "the pod initialized: waiting means unknown")
}

// TestTerminatePod_DefaultUnknownStatus: states are "unknown", "exit N",
// "waiting" (or "running"), init containers first.
func TestTerminatePod_DefaultUnknownStatus(t *testing.T) {
	w, run := v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}, v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	exit := func(code int32) v1.ContainerState { return terminatedState("", code) }
	st := func(name string, s v1.ContainerState) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, State: s}
	}
	for _, tc := range []struct {
		name            string
		inits, apps     int
		phase           v1.PodPhase
		initStatuses    []v1.ContainerStatus
		appStatuses     []v1.ContainerStatus
		want            []string
		wantSame        bool // the status is the pod's own
		wantLastAppExit int32
	}{
		{name: "failed pod", apps: 1, phase: v1.PodFailed, wantSame: true},
		{name: "running pod without container statuses", apps: 1, phase: v1.PodRunning},
		{name: "running pod with a terminated container", apps: 1, phase: v1.PodRunning,
			appStatuses: []v1.ContainerStatus{st("0", terminatedState("Test", 2))}, want: []string{"exit 2"}},
		{name: "last termination state set", apps: 1, phase: v1.PodRunning,
			appStatuses: []v1.ContainerStatus{{Name: "0", State: w, LastTerminationState: terminatedState("Test", 2)}},
			want:        []string{"unknown"}, wantLastAppExit: 2},
		{name: "no previous state", apps: 1, phase: v1.PodRunning, appStatuses: []v1.ContainerStatus{st("0", w)}, want: []string{"unknown"}},
		{name: "uninitialized pod defaults the first init container", inits: 1, apps: 1, phase: v1.PodPending,
			initStatuses: []v1.ContainerStatus{st("init-0", w)}, appStatuses: []v1.ContainerStatus{st("0", w)},
			want: []string{"unknown", "waiting"}},
		{name: "uninitialized pod defaults only the first init container", inits: 2, apps: 1, phase: v1.PodPending,
			initStatuses: []v1.ContainerStatus{st("init-0", w), st("init-1", w)}, appStatuses: []v1.ContainerStatus{st("0", w)},
			want: []string{"unknown", "waiting", "waiting"}},
		{name: "uninitialized pod defaults gaps", inits: 4, apps: 1, phase: v1.PodPending,
			initStatuses: []v1.ContainerStatus{st("init-0", w), st("init-1", w), st("init-2", exit(1)), st("init-3", w)},
			appStatuses:  []v1.ContainerStatus{st("0", w)}, want: []string{"unknown", "unknown", "exit 1", "waiting", "waiting"}},
		{name: "failed last container is uninitialized", inits: 3, apps: 1, phase: v1.PodPending,
			initStatuses: []v1.ContainerStatus{st("init-0", w), st("init-1", w), st("init-2", exit(1))},
			appStatuses:  []v1.ContainerStatus{st("0", w)}, want: []string{"unknown", "unknown", "exit 1", "waiting"}},
		{name: "successful last container is initialized", inits: 3, apps: 1, phase: v1.PodRunning,
			initStatuses: []v1.ContainerStatus{st("init-0", w), st("init-1", w), st("init-2", exit(0))},
			appStatuses:  []v1.ContainerStatus{st("0", w)}, want: []string{"unknown", "unknown", "exit 0", "unknown"}},
		{name: "successful last previous container is initialized, and container state is overwritten", inits: 3, apps: 1, phase: v1.PodRunning,
			initStatuses: []v1.ContainerStatus{st("init-0", w), st("init-1", w), {Name: "init-2", State: w, LastTerminationState: exit(0)}},
			appStatuses:  []v1.ContainerStatus{st("0", w)}, want: []string{"unknown", "unknown", "unknown", "unknown"}},
		{name: "running container proves initialization", inits: 1, apps: 1, phase: v1.PodRunning,
			initStatuses: []v1.ContainerStatus{st("init-0", w)}, appStatuses: []v1.ContainerStatus{st("0", run)},
			want: []string{"unknown", "unknown"}},
		{name: "evidence of terminated container proves initialization", inits: 1, apps: 1, phase: v1.PodRunning,
			initStatuses: []v1.ContainerStatus{st("init-0", w)}, appStatuses: []v1.ContainerStatus{st("0", exit(0))},
			want: []string{"unknown", "exit 0"}},
		{name: "evidence of previously terminated container proves initialization", inits: 1, apps: 1, phase: v1.PodRunning,
			initStatuses: []v1.ContainerStatus{st("init-0", w)},
			appStatuses:  []v1.ContainerStatus{{Name: "0", LastTerminationState: exit(0)}},
			want:         []string{"unknown", "unknown"}, wantLastAppExit: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := upstreamPod()
			for i := range tc.inits {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: fmt.Sprintf("init-%d", i)})
			}
			for i := range tc.apps {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: strconv.Itoa(i)})
			}
			pod.Spec.RestartPolicy = v1.RestartPolicyNever
			pod.Status = v1.PodStatus{Phase: tc.phase, StartTime: &metav1.Time{Time: time.Unix(1, 0).UTC()},
				InitContainerStatuses: tc.initStatuses, ContainerStatuses: tc.appStatuses}
			m, _ := fakeClockManager(t)
			m.SetPodStatus(pod, *pod.Status.DeepCopy())
			m.TerminatePod(pod.DeepCopy())
			got := cachedStatus(t, m, pod)
			if tc.wantSame {
				require.Equal(t, pod.Status, got)
				return
			}
			require.Equal(t, v1.PodFailed, got.Phase)
			require.Equal(t, tc.want, containerStates(t, append(got.InitContainerStatuses, got.ContainerStatuses...)))
			if last := got.ContainerStatuses; len(last) > 0 && last[0].LastTerminationState.Terminated != nil {
				require.Equal(t, tc.wantLastAppExit, last[0].LastTerminationState.Terminated.ExitCode, "the last state stays")
			}
		})
	}
}

func containerStates(t *testing.T, cs []v1.ContainerStatus) []string {
	t.Helper()
	var out []string
	for _, c := range cs {
		switch term := c.State.Terminated; {
		case term != nil && term.Reason == ReasonContainerStatusUnknown:
			require.Equal(t, unknownState, c.State)
			out = append(out, "unknown")
		case term != nil:
			out = append(out, fmt.Sprintf("exit %d", term.ExitCode))
		case c.State.Running != nil:
			out = append(out, "running")
		default:
			out = append(out, "waiting")
		}
	}
	return out
}

func TestTerminatePod_EnsurePodPhaseIsTerminal(t *testing.T) {
	for name, tc := range map[string]struct{ phase, want v1.PodPhase }{
		"Pending pod":       {v1.PodPending, v1.PodFailed},
		"Running pod":       {v1.PodRunning, v1.PodFailed},
		"Succeeded pod":     {v1.PodSucceeded, v1.PodSucceeded},
		"Failed pod":        {v1.PodFailed, v1.PodFailed},
		"Unknown pod":       {v1.PodUnknown, v1.PodFailed},
		"Unknown phase pod": {"SomeUnknownPhase", v1.PodFailed},
	} {
		t.Run(name, func(t *testing.T) {
			m, _ := fakeClockManager(t)
			pod := upstreamPod()
			pod.Status = v1.PodStatus{Phase: tc.phase}
			m.TerminatePod(pod)
			got := cachedStatus(t, m, pod)
			got.StartTime = nil
			require.Equal(t, v1.PodStatus{Phase: tc.want}, got)
		})
	}
}
