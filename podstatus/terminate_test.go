package podstatus

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit/nodekit/kubetypes"
)

func waiting(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
}

func exited(name string, code int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
}

func TestTerminatePodMarksUnseenEnds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		inits     []v1.Container
		status    v1.PodStatus
		static    bool
		wantPhase v1.PodPhase
		wantApps  []string // reason or exit code per app container
		wantInits []string
	}{
		{name: "pending without init containers: every app container unknown, Failed",
			status:    v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{waiting("a"), exited("b", 0)}},
			wantPhase: v1.PodFailed, wantApps: []string{ReasonContainerStatusUnknown, "exit 0"}},
		{name: "stuck in its second init container: apps stay waiting",
			inits:     []v1.Container{{Name: "i1"}, {Name: "i2"}, {Name: "i3"}},
			status:    v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: []v1.ContainerStatus{exited("i1", 0), {Name: "i2", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}, LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}}, waiting("i3")}, ContainerStatuses: []v1.ContainerStatus{waiting("a")}},
			wantPhase: v1.PodFailed, wantApps: []string{"waiting"}, wantInits: []string{"exit 0", ReasonContainerStatusUnknown, "waiting"}},
		{name: "already Succeeded stays",
			status:    v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{exited("a", 0)}},
			wantPhase: v1.PodSucceeded, wantApps: []string{"exit 0"}},
		{name: "a static pod keeps its phase (as upstream)", static: true,
			status:    v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{waiting("a")}},
			wantPhase: v1.PodRunning, wantApps: []string{ReasonContainerStatusUnknown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(Config{})
			require.NoError(t, err)
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}, Spec: v1.PodSpec{InitContainers: tc.inits}}
			if tc.static {
				pod.Annotations = map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource}
			}
			m.SetPodStatus(pod, tc.status)
			m.TerminatePod(pod)
			got, ok := m.PodStatus(pod.UID)
			require.True(t, ok)
			assert.Equal(t, tc.wantPhase, got.Phase)
			assert.Equal(t, tc.wantApps, states(got.ContainerStatuses))
			if tc.wantInits != nil {
				assert.Equal(t, tc.wantInits, states(got.InitContainerStatuses))
			}
		})
	}
}

func states(cs []v1.ContainerStatus) []string {
	var out []string
	for _, c := range cs {
		switch {
		case c.State.Terminated != nil && c.State.Terminated.Reason == ReasonContainerStatusUnknown:
			out = append(out, ReasonContainerStatusUnknown)
		case c.State.Terminated != nil:
			out = append(out, "exit "+string(rune('0'+c.State.Terminated.ExitCode)))
		default:
			out = append(out, "waiting")
		}
	}
	return out
}
