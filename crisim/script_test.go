package crisim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

func TestScriptedExit(t *testing.T) {
	cases := []struct {
		name       string
		script     Script
		wantReason string
	}{
		{"error", Script{ExitAfter: 5 * time.Second, ExitCode: 1, Reason: "Error", Message: "boom"}, "Error"},
		{"default reason for success", Script{ExitAfter: 2 * time.Second}, "Completed"},
		{"default reason for failure", Script{ExitAfter: time.Minute, ExitCode: 2}, "Error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.sim.Script(Match{Container: "app"}, tc.script)
			podID := e.runPod(t, "web")
			id := e.startContainer(t, podID, "app")
			require.True(t, e.clock.HasWaiters())

			e.clock.Step(tc.script.ExitAfter - time.Millisecond)
			require.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, e.containerStatus(t, id).State)

			e.clock.Step(time.Millisecond)
			st := e.waitState(t, id, runtimeapi.ContainerState_CONTAINER_EXITED)
			require.Equal(t, tc.script.ExitCode, st.ExitCode)
			require.Equal(t, tc.wantReason, st.Reason)
			require.Equal(t, tc.script.Message, st.Message)
			require.Equal(t, nanos(epoch), st.StartedAt)
			require.Equal(t, nanos(epoch.Add(tc.script.ExitAfter)), st.FinishedAt)
			require.False(t, e.clock.HasWaiters())
		})
	}
}

func TestScriptRunsForeverByDefault(t *testing.T) {
	e := newEnv(t)
	podID := e.runPod(t, "web")
	id := e.startContainer(t, podID, "app")
	require.False(t, e.clock.HasWaiters())
	e.clock.Step(24 * time.Hour)
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, e.containerStatus(t, id).State)
}

func TestScriptMatching(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.sim.Script(Match{Container: "app"}, Script{ExitAfter: time.Second, ExitCode: 1})
	e.sim.Script(Match{Container: "app", Namespace: "kube-system"}, Script{ExitAfter: time.Second, ExitCode: 2})
	e.sim.Script(Match{Pod: "batch"}, Script{ExitAfter: time.Second, ExitCode: 3})

	run := func(pod, namespace string) string {
		cfg := podConfig(pod)
		cfg.Metadata.Namespace = namespace
		id, err := e.rt.RunPodSandbox(ctx, cfg, "")
		require.NoError(t, err)
		return id
	}
	web, system, batch := run("web", "default"), run("dns", "kube-system"), run("batch", "default")
	want := map[string]int32{
		e.startContainer(t, web, "app"):    1,
		e.startContainer(t, system, "app"): 2,
		e.startContainer(t, batch, "job"):  3,
	}
	forever := e.startContainer(t, web, "side")

	e.clock.Step(time.Second)
	for id, code := range want {
		require.Equal(t, code, e.waitState(t, id, runtimeapi.ContainerState_CONTAINER_EXITED).ExitCode)
	}
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, e.containerStatus(t, forever).State)
}

func TestScriptStartError(t *testing.T) {
	e := newEnv(t)
	e.sim.Script(Match{Container: "app"}, Script{StartError: status.Error(codes.Internal, "exec: no such binary")})
	podID := e.runPod(t, "web")
	id := e.createContainer(t, podID, "app")

	err := e.rt.StartContainer(context.Background(), id)
	requireCode(t, codes.Internal, err)
	st := e.containerStatus(t, id)
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
	require.Equal(t, int32(128), st.ExitCode)
	require.Equal(t, "StartError", st.Reason)
	require.Contains(t, st.Message, "no such binary")
}

func TestExitContainer(t *testing.T) {
	e := newEnv(t)
	podID := e.runPod(t, "web")
	id := e.startContainer(t, podID, "app")
	e.clock.Step(time.Minute)

	require.NoError(t, e.sim.ExitContainer(id, 137, "OOMKilled"))
	st := e.containerStatus(t, id)
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
	require.Equal(t, int32(137), st.ExitCode)
	require.Equal(t, "OOMKilled", st.Reason)
	require.Equal(t, nanos(epoch.Add(time.Minute)), st.FinishedAt)
	requireCode(t, codes.FailedPrecondition, e.sim.ExitContainer(id, 1, ""))
}

// tickerOnly hides AfterFunc so the simulator falls back to NewTimer.
type tickerOnly struct{ clock.WithTicker }

func TestScriptWithoutAfterFunc(t *testing.T) {
	e := newEnv(t, withConfig(func(cfg *Config) { cfg.Clock = tickerOnly{cfg.Clock} }))
	e.sim.Script(Match{Container: "app"}, Script{ExitAfter: time.Second, ExitCode: 4})
	e.sim.Script(Match{Container: "idle"}, Script{ExitAfter: time.Hour})
	podID := e.runPod(t, "web")
	id := e.startContainer(t, podID, "app")
	idle := e.startContainer(t, podID, "idle")

	e.clock.Step(time.Second)
	require.Equal(t, int32(4), e.waitState(t, id, runtimeapi.ContainerState_CONTAINER_EXITED).ExitCode)
	// Removing idle stops its pending timer, whose goroutine must end
	// (goleak checks it at cleanup).
	require.NoError(t, e.rt.RemoveContainer(context.Background(), idle))
}
