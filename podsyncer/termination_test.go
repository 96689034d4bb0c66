package podsyncer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/podsyncer/podplan"
)

func TestTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	msgFile := filepath.Join(dir, "msg")
	require.NoError(t, os.WriteFile(msgFile, []byte(strings.Repeat("x", 5000)), 0o644))
	var log strings.Builder
	for i := range 100 {
		fmt.Fprintf(&log, "2026-11-24T07:00:00.000000000Z stdout F line %d\n", i)
	}
	log.WriteString("2026-11-24T07:00:00.000000000Z stderr P part-\n2026-11-24T07:00:00.000000000Z stderr F end\n")
	logFile := filepath.Join(dir, "0.log")
	require.NoError(t, os.WriteFile(logFile, []byte(log.String()), 0o644))

	c := &v1.Container{Name: "c", TerminationMessagePath: "/dev/termination-log"}
	st := &runtimeapi.ContainerStatus{ExitCode: 1, LogPath: logFile,
		Mounts: []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: msgFile}}}
	assert.Len(t, terminationMessage(c, st), maxTerminationMessage, "the file, at most 4 KiB")

	require.NoError(t, os.WriteFile(msgFile, nil, 0o644))
	assert.Empty(t, terminationMessage(c, st), "File policy: an empty file is an empty message")

	c.TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
	tail := terminationMessage(c, st)
	assert.True(t, strings.HasSuffix(tail, "line 99\npart-end\n"), tail)
	assert.Equal(t, maxTerminationLogLines, strings.Count(tail, "\n"), "the last 80 lines")
	assert.NotContains(t, tail, "line 20\n")

	st.ExitCode = 0
	assert.Empty(t, terminationMessage(c, st), "logs only on error")
	st.Message = "from the runtime"
	assert.Equal(t, "from the runtime", terminationMessage(c, st))

	long := strings.Repeat("y", 3000) + "\n"
	require.NoError(t, os.WriteFile(logFile, []byte("2026-11-24T07:00:00Z stdout F "+long), 0o644))
	assert.Len(t, logTail(logFile, 80, maxTerminationLogMessage), maxTerminationLogMessage, "at most 2 KiB")
}

func TestRestartsAfter(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever,
		InitContainers:      []v1.Container{{Name: "init"}, {Name: "side", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}},
		Containers:          []v1.Container{{Name: "app"}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg"}}}}}
	assert.True(t, restartsAfter(pod, &pod.Spec.InitContainers[1], 0), "sidecars always")
	assert.False(t, restartsAfter(pod, &pod.Spec.InitContainers[0], 1), "Never")
	assert.False(t, restartsAfter(pod, &pod.Spec.Containers[0], 1))
	assert.False(t, restartsAfter(pod, &v1.Container{Name: "dbg"}, 1), "ephemeral never")
	pod.Spec.RestartPolicy = v1.RestartPolicyOnFailure
	assert.True(t, restartsAfter(pod, &pod.Spec.InitContainers[0], 1))
	assert.False(t, restartsAfter(pod, &pod.Spec.InitContainers[0], 0))
	assert.True(t, restartsAfter(pod, &pod.Spec.Containers[0], 2))
}

func TestResolvePort(t *testing.T) {
	c := &v1.Container{Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	for in, want := range map[string]int{"http": 8080, "9090": 9090} {
		got, err := resolvePort(intstr.FromString(in), c)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	got, err := resolvePort(intstr.FromInt32(80), c)
	require.NoError(t, err)
	assert.Equal(t, 80, got)
	_, err = resolvePort(intstr.FromString("nope"), c)
	assert.Error(t, err)
}

func TestKillGrace(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](600)}}
	c := &v1.Container{LivenessProbe: &v1.Probe{TerminationGracePeriodSeconds: ptr.To[int64](10)}, StartupProbe: &v1.Probe{}}
	assert.Equal(t, int64(10), killGrace(pod, c, podplan.ReasonLiveness), "the probe's own grace")
	assert.Equal(t, int64(600), killGrace(pod, c, podplan.ReasonStartup), "no probe grace: the pod's")
	assert.Equal(t, int64(600), killGrace(pod, c, podplan.ReasonChanged))
}

func TestLimitTerminationMessages(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "i"}}, Containers: []v1.Container{{Name: "a"}, {Name: "b"}, {Name: "c"}}}}
	long := strings.Repeat("x", 4096)
	term := func(msg string) v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: msg}}
	}
	s := &v1.PodStatus{
		InitContainerStatuses: []v1.ContainerStatus{{Name: "i", State: term(long)}},
		ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: term(long), LastTerminationState: term(long)},
			{Name: "b", State: term("short")}, {Name: "c", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}},
	}
	limitTerminationMessages(pod, s)
	assert.Len(t, s.InitContainerStatuses[0].State.Terminated.Message, 3072, "12 KiB shared by four containers")
	assert.Len(t, s.ContainerStatuses[0].State.Terminated.Message, 3072)
	assert.Len(t, s.ContainerStatuses[0].LastTerminationState.Terminated.Message, 3072)
	assert.Equal(t, "short", s.ContainerStatuses[1].State.Terminated.Message)

	one := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}}
	s = &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: term(long)}}}
	limitTerminationMessages(one, s)
	assert.Len(t, s.ContainerStatuses[0].State.Terminated.Message, 4096, "one container keeps its 4 KiB")
}
