package plegtest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/pleg/plegtest"
)

// collector is a pleg.Config.Sink that keeps what it receives.
type collector struct {
	mu  sync.Mutex
	evs []pleg.PodLifecycleEvent
}

func (c *collector) sink(ev pleg.PodLifecycleEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evs = append(c.evs, ev)
}

// take returns and forgets the events received so far.
func (c *collector) take() []pleg.PodLifecycleEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.evs
	c.evs = nil
	return out
}

// setup is a Generator over a fake runtime, both on one fake clock, with
// events going to a collector.
type setup struct {
	clk *clocktesting.FakeClock
	rt  *plegtest.Runtime
	gen *pleg.Generator
	got *collector
}

func newSetup(t *testing.T, cfg pleg.Config) *setup {
	t.Helper()
	s := &setup{clk: clocktesting.NewFakeClock(epoch), got: &collector{}}
	s.rt = plegtest.New(s.clk)
	cfg.Runtime, cfg.Clock, cfg.Sink, cfg.RuntimeName = s.rt, s.clk, s.got.sink, "fake"
	gen, err := pleg.New(cfg)
	require.NoError(t, err)
	s.gen = gen
	return s
}

func event(typ pleg.EventType, id string) pleg.PodLifecycleEvent {
	return pleg.PodLifecycleEvent{ID: "uid-web", Type: typ, ContainerID: containerid.ID{Type: "fake", ID: id}}
}

func TestGeneratorRelistSeesTheLifecycle(t *testing.T) {
	s := newSetup(t, pleg.Config{})
	ctx := context.Background()
	var app, again string
	for _, step := range []struct {
		name string
		do   func(t *testing.T)
		want func() []pleg.PodLifecycleEvent
	}{
		{
			name: "pod and container start",
			do: func(t *testing.T) {
				s.rt.RunPod("uid-web", "default", "web")
				app = s.rt.StartContainer("uid-web", "app")
			},
			want: func() []pleg.PodLifecycleEvent {
				return []pleg.PodLifecycleEvent{event(pleg.ContainerStarted, "sb-1"), event(pleg.ContainerStarted, app)}
			},
		},
		{
			name: "nothing changed",
			do:   func(*testing.T) {},
			want: func() []pleg.PodLifecycleEvent { return nil },
		},
		{
			name: "container exits",
			do:   func(t *testing.T) { require.NoError(t, s.rt.ExitContainer(app, 2)) },
			want: func() []pleg.PodLifecycleEvent { return []pleg.PodLifecycleEvent{event(pleg.ContainerDied, app)} },
		},
		{
			name: "container removed, restarted",
			do: func(t *testing.T) {
				require.NoError(t, s.rt.RemoveContainer(app))
				again = s.rt.StartContainer("uid-web", "app")
			},
			want: func() []pleg.PodLifecycleEvent {
				return []pleg.PodLifecycleEvent{event(pleg.ContainerRemoved, app), event(pleg.ContainerStarted, again)}
			},
		},
		{
			name: "pod stopped",
			do:   func(t *testing.T) { require.NoError(t, s.rt.StopPod("uid-web")) },
			want: func() []pleg.PodLifecycleEvent {
				return []pleg.PodLifecycleEvent{event(pleg.ContainerDied, "sb-1"), event(pleg.ContainerDied, again)}
			},
		},
		{
			name: "pod removed",
			do:   func(t *testing.T) { require.NoError(t, s.rt.RemovePod("uid-web")) },
			want: func() []pleg.PodLifecycleEvent {
				return []pleg.PodLifecycleEvent{event(pleg.ContainerRemoved, "sb-1"), event(pleg.ContainerRemoved, again)}
			},
		},
	} {
		step.do(t)
		s.clk.Step(time.Second)
		_, err := s.gen.Relist(ctx)
		require.NoError(t, err, step.name)
		require.Equal(t, step.want(), s.got.take(), step.name)

		st, err := s.gen.Cache().Get("uid-web")
		require.NoError(t, err)
		switch step.name {
		case "container exits":
			require.Equal(t, "web", st.Name)
			require.Equal(t, []string{"10.88.0.2"}, st.IPs)
			require.Len(t, st.ContainerStatuses, 1)
			require.Equal(t, int32(2), st.ContainerStatuses[0].ExitCode)
		case "container removed, restarted":
			require.Equal(t, again, st.ContainerStatuses[0].Id)
			require.Equal(t, uint32(1), st.ContainerStatuses[0].Metadata.Attempt)
		case "pod removed":
			require.Empty(t, st.SandboxStatuses, "gone from the cache")
		}
	}
	require.NoError(t, s.gen.Healthy())
}

func TestGeneratorSurfacesInjectedErrors(t *testing.T) {
	s := newSetup(t, pleg.Config{RuntimeRequestTimeout: 10 * time.Second})
	ctx := context.Background()
	down := status.Error(codes.Unavailable, "runtime down")

	// A failed listing fails the relist and keeps the generator unhealthy.
	s.rt.InjectError("ListPodSandbox", down, 1)
	_, err := s.gen.Relist(ctx)
	require.ErrorIs(t, err, down)
	require.ErrorIs(t, s.gen.Healthy(), pleg.ErrUnhealthy)
	require.ErrorContains(t, s.gen.Healthy(), "runtime down")
	_, err = s.gen.Relist(ctx)
	require.NoError(t, err)
	require.NoError(t, s.gen.Healthy())

	// A failed status fetch caches the error, emits nothing, and the pod is
	// inspected again by the next relist.
	s.rt.RunPod("uid-web", "default", "web")
	s.rt.InjectError("PodSandboxStatus", down, 1)
	res, err := s.gen.Relist(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Failed)
	require.Empty(t, s.got.take())
	_, err = s.gen.Cache().Get("uid-web")
	require.ErrorIs(t, err, down)
	res, err = s.gen.Relist(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Failed)
	require.Equal(t, []pleg.PodLifecycleEvent{event(pleg.ContainerStarted, "sb-1")}, s.got.take())

	// A runtime that does not answer times out on the fake clock.
	s.rt.Block("ListContainers", 1)
	calls := s.rt.Calls("ListContainers")
	errc := make(chan error, 1)
	go func() {
		_, err := s.gen.Relist(ctx)
		errc <- err
	}()
	require.Eventually(t, func() bool { return s.rt.Calls("ListContainers") == calls+1 }, 5*time.Second, time.Millisecond)
	s.clk.Step(10 * time.Second)
	err = <-errc
	require.Equal(t, codes.Canceled, status.Code(err), "the fake answers the canceled context like a CRI client")
	require.ErrorContains(t, err, "runtime request timed out")
}

func TestGeneratorEvented(t *testing.T) {
	s := newSetup(t, pleg.Config{Evented: true})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.gen.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-errc)
	}()

	// Once the stream is open and Run idles, only runtime events can
	// trigger a relist: the clock never moves until the stream breaks.
	idle := func() bool { _, ok := s.gen.NextWake(); return ok }
	require.Eventually(t, func() bool { return s.rt.Streams() == 1 && idle() }, 5*time.Second, time.Millisecond)
	lists := s.rt.Calls("ListPodSandbox")

	s.rt.RunPod("uid-web", "default", "web")
	app := s.rt.StartContainer("uid-web", "app")
	want := []pleg.PodLifecycleEvent{event(pleg.ContainerStarted, "sb-1"), event(pleg.ContainerStarted, app)}
	var got []pleg.PodLifecycleEvent
	require.Eventually(t, func() bool { got = append(got, s.got.take()...); return len(got) >= len(want) }, 5*time.Second, time.Millisecond)
	require.Equal(t, want, got)
	require.NoError(t, s.rt.ExitContainer(app, 0))
	require.Eventually(t, func() bool {
		got = append(got, s.got.take()...)
		return len(got) > len(want)
	}, 5*time.Second, time.Millisecond)
	require.Equal(t, event(pleg.ContainerDied, app), got[len(want)])
	require.Greater(t, s.rt.Calls("ListPodSandbox"), lists, "events led to pod relists")

	// The stream breaks: pleg relists at once and reconnects after its
	// backoff on the clock.
	require.Equal(t, 1, s.rt.BreakStreams(status.Error(codes.Unavailable, "runtime restarted")))
	require.Eventually(t, func() bool {
		if s.rt.Streams() == 1 {
			return true
		}
		s.clk.Step(100 * time.Millisecond)
		return false
	}, 5*time.Second, time.Millisecond)
	require.Equal(t, 2, s.rt.Calls("GetContainerEvents"))
	require.NoError(t, s.rt.RemovePod("uid-web"))
	require.Eventually(t, func() bool {
		for _, ev := range s.got.take() {
			if ev == event(pleg.ContainerRemoved, app) {
				return true
			}
		}
		return false
	}, 5*time.Second, time.Millisecond)
	st, _ := s.gen.Cache().Get(types.UID("uid-web"))
	require.Empty(t, st.ContainerStatuses)
	require.NoError(t, s.gen.Healthy())
}
