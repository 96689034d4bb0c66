package crisim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// stopAsync runs StopContainer in the background.
func (e *env) stopAsync(ctx context.Context, id string, timeout int64) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- e.rt.StopContainer(ctx, id, timeout) }()
	return errc
}

func requireNotDone(t *testing.T, errc <-chan error) {
	t.Helper()
	select {
	case err := <-errc:
		t.Fatalf("StopContainer returned early: %v", err)
	default:
	}
}

func requireDone(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("StopContainer did not return")
		return nil
	}
}

func TestStopContainerTimeout(t *testing.T) {
	cases := []struct {
		name       string
		script     Script
		timeout    int64
		wantAfter  time.Duration
		wantCode   int32
		wantReason string
	}{
		{"exits at once", Script{}, 10, 0, 0, "Completed"},
		{"graceful after delay", Script{StopDelay: 3 * time.Second}, 10, 3 * time.Second, 0, "Completed"},
		{"graceful exit code", Script{StopDelay: time.Second, TermExitCode: 143}, 10, time.Second, 143, "Error"},
		{"killed at timeout", Script{StopDelay: 30 * time.Second}, 10, 10 * time.Second, 137, "Error"},
		{"delay equal to timeout is killed", Script{StopDelay: 10 * time.Second}, 10, 10 * time.Second, 137, "Error"},
		{"zero timeout kills at once", Script{StopDelay: 5 * time.Second}, 0, 0, 137, "Error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.sim.Script(Match{}, tc.script)
			podID := e.runPod(t, "web")
			id := e.startContainer(t, podID, "app")

			errc := e.stopAsync(context.Background(), id, tc.timeout)
			if tc.wantAfter > 0 {
				e.waitWaiters(t, 1)
				e.clock.Step(tc.wantAfter - time.Millisecond)
				requireNotDone(t, errc)
				e.clock.Step(time.Millisecond)
			}
			require.NoError(t, requireDone(t, errc))

			st := e.containerStatus(t, id)
			require.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
			require.Equal(t, tc.wantCode, st.ExitCode)
			require.Equal(t, tc.wantReason, st.Reason)
			require.Equal(t, nanos(epoch.Add(tc.wantAfter)), st.FinishedAt)
			require.False(t, e.clock.HasWaiters(), "timers are cancelled once the container exited")
		})
	}
}

func TestStopContainerShorterSecondTimeout(t *testing.T) {
	e := newEnv(t)
	e.sim.Script(Match{}, Script{StopDelay: time.Hour})
	podID := e.runPod(t, "web")
	id := e.startContainer(t, podID, "app")

	first := e.stopAsync(context.Background(), id, 60)
	e.waitWaiters(t, 1)
	second := e.stopAsync(context.Background(), id, 5)
	e.waitWaiters(t, 2)
	e.clock.Step(5 * time.Second)
	require.NoError(t, requireDone(t, first))
	require.NoError(t, requireDone(t, second))
	st := e.containerStatus(t, id)
	require.Equal(t, int32(137), st.ExitCode)
	require.Equal(t, nanos(epoch.Add(5*time.Second)), st.FinishedAt)
}

func TestStopContainerCallerGivesUp(t *testing.T) {
	e := newEnv(t)
	e.sim.Script(Match{}, Script{StopDelay: time.Hour})
	podID := e.runPod(t, "web")
	id := e.startContainer(t, podID, "app")

	ctx, cancel := context.WithCancel(context.Background())
	errc := e.stopAsync(ctx, id, 30)
	e.waitWaiters(t, 1)
	cancel()
	requireCode(t, codes.Canceled, requireDone(t, errc))
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, e.containerStatus(t, id).State)

	// The runtime still kills the container when the timeout expires.
	e.clock.Step(30 * time.Second)
	require.Equal(t, int32(137), e.waitState(t, id, runtimeapi.ContainerState_CONTAINER_EXITED).ExitCode)
}

func TestStopNotRunning(t *testing.T) {
	e := newEnv(t)
	podID := e.runPod(t, "web")
	id := e.createContainer(t, podID, "app")
	require.NoError(t, e.rt.StopContainer(context.Background(), id, 10))
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_CREATED, e.containerStatus(t, id).State,
		"stopping a created container leaves it created, as containerd does")
}
