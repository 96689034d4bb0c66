package crisim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// subscription is a cri-client GetContainerEvents call running in the
// background; err is set when done is closed.
type subscription struct {
	events chan *runtimeapi.ContainerEventResponse
	done   chan struct{}
	err    error
}

// subscribe starts GetContainerEvents and returns once the server has
// registered the subscriber (signalled by its response headers). buffer is
// the capacity of the channel cri-client delivers events to.
func (e *env) subscribe(t *testing.T, buffer int) *subscription {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sub := &subscription{
		events: make(chan *runtimeapi.ContainerEventResponse, buffer),
		done:   make(chan struct{}),
	}
	ready := make(chan struct{})
	go func() {
		defer close(sub.done)
		sub.err = e.rt.GetContainerEvents(ctx, sub.events, func(c runtimeapi.RuntimeService_GetContainerEventsClient) {
			_, _ = c.Header()
			close(ready)
		})
	}()
	t.Cleanup(func() {
		cancel()
		for {
			select {
			case <-sub.events: // unblock cri-client if it is delivering
			case <-sub.done:
				return
			}
		}
	})
	select {
	case <-ready:
	case <-sub.done:
		t.Fatalf("GetContainerEvents: %v", sub.err)
	}
	return sub
}

type wantEvent struct {
	id  string
	typ runtimeapi.ContainerEventType
}

func (sub *subscription) next(t *testing.T) *runtimeapi.ContainerEventResponse {
	t.Helper()
	select {
	case ev := <-sub.events:
		return ev
	case <-sub.done:
		t.Fatalf("event stream ended: %v", sub.err)
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	return nil
}

func TestContainerEvents(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	subs := []*subscription{e.subscribe(t, 100), e.subscribe(t, 100)}

	podID := e.runPod(t, "web")
	c1 := e.startContainer(t, podID, "app")
	require.NoError(t, e.rt.StopContainer(ctx, c1, 10))
	require.NoError(t, e.rt.RemoveContainer(ctx, c1))
	c2 := e.startContainer(t, podID, "side")
	require.NoError(t, e.rt.RemoveContainer(ctx, c2))
	require.NoError(t, e.rt.StopPodSandbox(ctx, podID))
	require.NoError(t, e.rt.RemovePodSandbox(ctx, podID))

	const (
		created = runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT
		started = runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT
		stopped = runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
		deleted = runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT
	)
	want := []wantEvent{
		{podID, created}, {podID, started},
		{c1, created}, {c1, started}, {c1, stopped}, {c1, deleted},
		{c2, created}, {c2, started}, {c2, stopped}, {c2, deleted},
		{podID, stopped}, {podID, deleted},
	}
	for i, sub := range subs {
		var got []*runtimeapi.ContainerEventResponse
		for range want {
			got = append(got, sub.next(t))
		}
		var gotIDs []wantEvent
		for _, ev := range got {
			gotIDs = append(gotIDs, wantEvent{ev.ContainerId, ev.ContainerEventType})
			require.Equal(t, podID, ev.PodSandboxStatus.GetId(), "event carries the sandbox status")
			require.NotZero(t, ev.CreatedAt)
		}
		require.Equal(t, want, gotIDs, "subscriber %d", i)

		require.Len(t, got[2].ContainersStatuses, 1)
		require.Equal(t, runtimeapi.ContainerState_CONTAINER_CREATED, got[2].ContainersStatuses[0].State)
		require.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, got[3].ContainersStatuses[0].State)
		require.Empty(t, got[5].ContainersStatuses, "a deleted container is gone from the statuses")
		require.Equal(t, int32(137), got[8].ContainersStatuses[0].ExitCode, "removing a running container kills it")
		require.Equal(t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, got[10].PodSandboxStatus.State)
	}
}

func TestContainerEventsTimedExit(t *testing.T) {
	e := newEnv(t)
	sub := e.subscribe(t, 100)
	e.sim.Script(Match{}, Script{ExitAfter: time.Second, ExitCode: 3})
	podID := e.runPod(t, "web")
	id := e.startContainer(t, podID, "app")
	for range 3 {
		sub.next(t) // sandbox created, started, container created
	}
	require.Equal(t, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, sub.next(t).ContainerEventType)

	e.clock.Step(time.Second)
	ev := sub.next(t)
	require.Equal(t, id, ev.ContainerId)
	require.Equal(t, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, ev.ContainerEventType)
	require.Equal(t, int32(3), ev.ContainersStatuses[0].ExitCode)
}

func TestContainerEventsSlowSubscriberIsDropped(t *testing.T) {
	e := newEnv(t, withConfig(func(cfg *Config) { cfg.EventBuffer = 64 }))
	ctx := context.Background()
	// An unbuffered channel nobody reads: cri-client blocks delivering the
	// first event and stops reading the stream.
	slow := e.subscribe(t, 0)
	healthy := e.subscribe(t, 10000)

	// Large annotations make every event big, so gRPC flow control soon
	// blocks the server side of the slow stream.
	cfg := podConfig("web")
	cfg.Annotations["big"] = strings.Repeat("x", 32<<10)
	podID, err := e.rt.RunPodSandbox(ctx, cfg, "")
	require.NoError(t, err)
	events := 2
	for i := 0; e.sim.subscribers() == 2; i++ {
		require.Less(t, i, 1000, "slow subscriber never dropped")
		id := e.createContainer(t, podID, "app")
		require.NoError(t, e.rt.RemoveContainer(ctx, id))
		events += 2
	}
	require.Equal(t, 1, e.sim.subscribers(), "only the slow subscriber is dropped")

	for range events {
		healthy.next(t)
	}
	require.Eventually(t, func() bool {
		select {
		case <-slow.events:
			return false
		case <-slow.done:
			return true
		}
	}, 5*time.Second, time.Millisecond)
	requireCode(t, codes.ResourceExhausted, slow.err)

	// The client reconnects and sees new events.
	again := e.subscribe(t, 10)
	e.createContainer(t, podID, "after")
	require.Equal(t, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, again.next(t).ContainerEventType)
}
