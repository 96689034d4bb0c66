package crisim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestParseScript(t *testing.T) {
	sc, ex, err := ParseScript("exit-after=5s exit-code=3 exec-exit-code=1")
	require.NoError(t, err)
	assert.Equal(t, Script{ExitAfter: 5 * time.Second, ExitCode: 3}, sc)
	require.NotNil(t, ex)
	assert.Equal(t, int32(1), ex.ExitCode)
	sc, ex, err = ParseScript("")
	require.NoError(t, err)
	assert.Equal(t, Script{}, sc)
	assert.Nil(t, ex)
	for _, bad := range []string{"exit-after=soon", "exit-code=x", "exec-exit-code=", "crash=1"} {
		_, _, err := ParseScript(bad)
		assert.Error(t, err, bad)
	}
}

func TestScriptFromPod(t *testing.T) {
	e := newEnv(t)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web", Annotations: map[string]string{
		AnnotationScriptPrefix + "app":  "exit-after=2s exit-code=1",
		AnnotationLogsPrefix + "app":    "hello\nworld\n",
		AnnotationScriptPrefix + "typo": "exit-afterr=1s",
	}}}
	require.NoError(t, e.sim.ScriptFromPod(pod, &v1.Container{Name: "app"}))
	require.NoError(t, e.sim.ScriptFromPod(pod, &v1.Container{Name: "app"}), "once per pod and container")
	err := e.sim.ScriptFromPod(pod, &v1.Container{Name: "typo"})
	require.ErrorContains(t, err, "sim.nodekit.io/typo")
	require.Error(t, e.sim.ScriptFromPod(pod, &v1.Container{Name: "typo"}), "a bad script is reported at every attempt")
	require.NoError(t, e.sim.ScriptFromPod(pod, &v1.Container{Name: "plain"}), "no annotation: nothing to do")

	podID := e.runPod(t, "web")
	id := e.startContainer(t, podID, "app")
	e.clock.Step(2 * time.Second)
	st := e.waitState(t, id, runtimeapi.ContainerState_CONTAINER_EXITED)
	assert.Equal(t, int32(1), st.ExitCode, "scripted once, applied to the instance")
	resp, err := e.rt.ListContainers(context.Background(), nil)
	require.NoError(t, err)
	assert.Len(t, resp, 1)
}
