package plegtest_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit/nodekit/pleg/plegtest"
)

// stream is one GetContainerEvents call running in a goroutine.
type stream struct {
	ch     chan *runtimeapi.ContainerEventResponse
	cancel context.CancelFunc
	errc   chan error
}

// openStream starts GetContainerEvents on an unbuffered channel and waits
// until the stream is open. The test ends it with close (or the cleanup).
func openStream(t *testing.T, rt *plegtest.Runtime) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &stream{ch: make(chan *runtimeapi.ContainerEventResponse), cancel: cancel, errc: make(chan error, 1)}
	before := rt.Streams()
	go func() { s.errc <- rt.GetContainerEvents(ctx, s.ch, nil) }()
	t.Cleanup(func() { s.close() })
	require.Eventually(t, func() bool { return rt.Streams() == before+1 }, 5*time.Second, time.Millisecond)
	return s
}

// close cancels the stream and returns what GetContainerEvents returned.
func (s *stream) close() error {
	s.cancel()
	if s.errc == nil {
		return nil
	}
	err := <-s.errc
	s.errc = nil
	return err
}

// next receives one event.
func (s *stream) next(t *testing.T) *runtimeapi.ContainerEventResponse {
	t.Helper()
	select {
	case ev := <-s.ch:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	return nil
}

type evKey struct {
	id  string
	typ runtimeapi.ContainerEventType
}

const (
	created = runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT
	started = runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT
	stopped = runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
	deleted = runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT
)

func TestEventsFollowTheLifecycle(t *testing.T) {
	rt := plegtest.New(nil)
	rt.RunPod("uid-early", "default", "early") // before the stream: not sent
	s := openStream(t, rt)

	// Nobody reads yet: the driver never blocks on a stream.
	sb := rt.RunPod("uid-web", "default", "web")
	app := rt.StartContainer("uid-web", "app")
	require.NoError(t, rt.ExitContainer(app, 1))
	require.NoError(t, rt.RemoveContainer(app))
	side := rt.StartContainer("uid-web", "side")
	require.NoError(t, rt.StopPod("uid-web"))
	require.NoError(t, rt.RemovePod("uid-web"))
	orphan := rt.StartContainer("uid-gone", "orphan")

	want := []evKey{
		{sb, created}, {sb, started},
		{app, created}, {app, started}, {app, stopped}, {app, deleted},
		{side, created}, {side, started},
		{side, stopped}, {sb, stopped},
		{side, deleted}, {sb, deleted},
		{orphan, created}, {orphan, started},
	}
	var evs []*runtimeapi.ContainerEventResponse
	var got []evKey
	for range want {
		ev := s.next(t)
		evs = append(evs, ev)
		got = append(got, evKey{ev.ContainerId, ev.ContainerEventType})
	}
	require.Equal(t, want, got)

	for i, ev := range evs[:12] {
		require.Equal(t, "uid-web", ev.PodSandboxStatus.GetMetadata().GetUid(), "event %d names its pod", i)
		require.Positive(t, ev.CreatedAt)
	}
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, evs[4].ContainersStatuses[0].State, "the stopped event carries the new state")
	require.Equal(t, int32(1), evs[4].ContainersStatuses[0].ExitCode)
	require.Empty(t, evs[5].ContainersStatuses, "a deleted container is gone from its sandbox's statuses")
	require.Equal(t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, evs[9].PodSandboxStatus.State)
	require.Nil(t, evs[12].PodSandboxStatus, "a container without a sandbox")
	require.Equal(t, orphan, evs[12].ContainersStatuses[0].Id)

	require.Equal(t, codes.Canceled, status.Code(s.close()))
	require.Zero(t, rt.Streams())
}

func TestEstablished(t *testing.T) {
	rt := plegtest.New(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := make(chan runtimeapi.RuntimeService_GetContainerEventsClient, 2)
	errc := make(chan error, 1)
	go func() {
		errc <- rt.GetContainerEvents(ctx, make(chan *runtimeapi.ContainerEventResponse), func(c runtimeapi.RuntimeService_GetContainerEventsClient) {
			assert.Zero(t, rt.Streams(), "counted once established returned")
			calls <- c
		})
	}()
	c := <-calls
	md, err := c.Header()
	require.NoError(t, err)
	require.NotNil(t, md, "pleg reads non-nil headers as a registered subscription")
	require.Nil(t, c.Trailer())
	require.NoError(t, c.CloseSend())
	require.Equal(t, ctx, c.Context())
	_, err = c.Recv()
	require.Error(t, err)
	require.Error(t, c.RecvMsg(nil))
	require.Error(t, c.SendMsg(nil))
	require.Eventually(t, func() bool { return rt.Streams() == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	require.Equal(t, codes.Canceled, status.Code(<-errc))
	require.Empty(t, calls, "established is called once")
}

func TestBreakStreams(t *testing.T) {
	rt := plegtest.New(nil)
	require.Zero(t, rt.BreakStreams(nil))
	a, b := openStream(t, rt), openStream(t, rt)
	require.Equal(t, 2, rt.Streams())
	require.Equal(t, 2, rt.BreakStreams(nil))
	require.ErrorIs(t, <-a.errc, io.EOF)
	a.errc = nil
	require.ErrorIs(t, <-b.errc, io.EOF)
	b.errc = nil
	require.Zero(t, rt.Streams())

	lost := status.Error(codes.Unavailable, "runtime restarted")
	c := openStream(t, rt)
	rt.RunPod("uid-a", "default", "a") // queued, never delivered
	require.Equal(t, 1, rt.BreakStreams(lost))
	require.ErrorIs(t, <-c.errc, lost)
	c.errc = nil
	require.Equal(t, 3, rt.Calls("GetContainerEvents"))
}

func TestGetContainerEventsFaults(t *testing.T) {
	rt := plegtest.New(nil)
	refused := status.Error(codes.Unimplemented, "no events")
	rt.InjectError("GetContainerEvents", refused, 1)
	err := rt.GetContainerEvents(context.Background(), nil, func(runtimeapi.RuntimeService_GetContainerEventsClient) {
		t.Error("established called for a refused stream")
	})
	require.ErrorIs(t, err, refused)

	rt.Block("GetContainerEvents", -1)
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0)) // already over
	defer cancel()
	err = rt.GetContainerEvents(ctx, nil, func(runtimeapi.RuntimeService_GetContainerEventsClient) {
		t.Error("established called for a hung stream")
	})
	require.Equal(t, codes.DeadlineExceeded, status.Code(err))
	require.False(t, errors.Is(err, refused))
}
