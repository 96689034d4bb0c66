package crisim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestFaultTimes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	podID := e.runPod(t, "web")
	id := e.createContainer(t, podID, "app")

	e.sim.Inject("ContainerStatus", Fault{Err: status.Error(codes.Unavailable, "runtime busy"), Times: 2})
	for range 2 {
		_, err := e.rt.ContainerStatus(ctx, id, false)
		requireCode(t, codes.Unavailable, err)
	}
	_, err := e.rt.ContainerStatus(ctx, id, false)
	require.NoError(t, err, "the fault is used up")
	require.Equal(t, 3, e.sim.Calls("ContainerStatus"))
}

func TestFaultUntilCleared(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.sim.Inject("ListContainers", Fault{Err: status.Error(codes.Internal, "boom")})
	for range 5 {
		_, err := e.rt.ListContainers(ctx, nil)
		requireCode(t, codes.Internal, err)
	}
	e.sim.ClearFaults()
	_, err := e.rt.ListContainers(ctx, nil)
	require.NoError(t, err)
}

func TestFaultLatency(t *testing.T) {
	e := newEnv(t)
	e.sim.Inject("Version", Fault{Latency: 2 * time.Second, Times: 1})

	errc := make(chan error, 1)
	go func() {
		_, err := e.rt.Version(context.Background(), "v1")
		errc <- err
	}()
	require.Eventually(t, e.clock.HasWaiters, 5*time.Second, time.Millisecond)
	e.clock.Step(2*time.Second - time.Millisecond)
	select {
	case err := <-errc:
		t.Fatalf("Version returned before its latency elapsed: %v", err)
	default:
	}
	e.clock.Step(time.Millisecond)
	select {
	case err := <-errc:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Version still blocked after the clock step")
	}
}

func TestFaultLatencyThenError(t *testing.T) {
	e := newEnv(t)
	e.sim.Inject("RunPodSandbox", Fault{Latency: time.Second, Err: status.Error(codes.DeadlineExceeded, "slow CNI")})
	errc := make(chan error, 1)
	go func() {
		_, err := e.rt.RunPodSandbox(context.Background(), podConfig("web"), "")
		errc <- err
	}()
	e.waitWaiters(t, 1)
	e.clock.Step(time.Second)
	requireCode(t, codes.DeadlineExceeded, <-errc)
}

func TestFaultLatencyHonoursContext(t *testing.T) {
	e := newEnv(t)
	e.sim.Inject("ListPodSandbox", Fault{Latency: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := e.rt.ListPodSandbox(ctx, nil)
	requireCode(t, codes.DeadlineExceeded, err)
	require.Eventually(t, func() bool { return !e.clock.HasWaiters() }, 5*time.Second, time.Millisecond,
		"the latency timer is released when the call is abandoned")
}

func TestFaultOnStreams(t *testing.T) {
	e := newEnv(t, streaming)
	ctx := context.Background()

	e.sim.Inject("StreamContainers", Fault{Err: status.Error(codes.Unavailable, "down"), Times: 1})
	_, err := e.rt.ListContainers(ctx, nil)
	requireCode(t, codes.Unavailable, err)

	e.sim.Inject("GetContainerEvents", Fault{Err: status.Error(codes.Unavailable, "down"), Times: 1})
	err = e.rt.GetContainerEvents(ctx, make(chan *runtimeapi.ContainerEventResponse, 1), nil)
	requireCode(t, codes.Unavailable, err)
	require.Equal(t, 1, e.sim.Calls("GetContainerEvents"))
}

func TestInjectUnknownMethodPanics(t *testing.T) {
	s := New(Config{})
	require.PanicsWithValue(t, `crisim: Inject: "ListContainer" is not a CRI RPC`, func() {
		s.Inject("ListContainer", Fault{})
	})
	require.NotPanics(t, func() { s.Inject("PullImage", Fault{}) })
}
