package pleg

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/crisim"
)

// TestRelistTransitions walks one pod through every transition a runtime
// can show, relisting after each step.
func TestRelistTransitions(t *testing.T) {
	e := newEnv(t)
	g := e.gen(t, Config{DeliverContainerChanged: true})
	ctx := context.Background()
	uid := uidOf("web")
	var sb, app, side, job string

	steps := []struct {
		name string
		act  func(t *testing.T)
		want func() []PodLifecycleEvent
	}{
		{"nothing", func(*testing.T) {}, func() []PodLifecycleEvent { return nil }},
		{"sandbox ready", func(t *testing.T) { sb = e.runPod(t, "web") },
			func() []PodLifecycleEvent { return []PodLifecycleEvent{ev(uid, ContainerStarted, sb)} }},
		{"container created (unknown)", func(t *testing.T) { app = e.createContainer(t, sb, "web", "app") },
			func() []PodLifecycleEvent { return []PodLifecycleEvent{ev(uid, ContainerChanged, app)} }},
		{"unknown → running", func(t *testing.T) { require.NoError(t, e.rt.StartContainer(ctx, app)) },
			func() []PodLifecycleEvent { return []PodLifecycleEvent{ev(uid, ContainerStarted, app)} }},
		{"no change", func(*testing.T) {}, func() []PodLifecycleEvent { return nil }},
		{"running → exited", func(t *testing.T) { require.NoError(t, e.sim.ExitContainer(app, 1, "")) },
			func() []PodLifecycleEvent { return []PodLifecycleEvent{ev(uid, ContainerDied, app)} }},
		{"exited → removed", func(t *testing.T) { require.NoError(t, e.rt.RemoveContainer(ctx, app)) },
			func() []PodLifecycleEvent { return []PodLifecycleEvent{ev(uid, ContainerRemoved, app)} }},
		{"non-existent → running", func(t *testing.T) { side = e.startContainer(t, sb, "web", "side") },
			func() []PodLifecycleEvent { return []PodLifecycleEvent{ev(uid, ContainerStarted, side)} }},
		{"running → removed", func(t *testing.T) { require.NoError(t, e.rt.RemoveContainer(ctx, side)) },
			func() []PodLifecycleEvent {
				return []PodLifecycleEvent{ev(uid, ContainerDied, side), ev(uid, ContainerRemoved, side)}
			}},
		{"unknown → removed", func(t *testing.T) {
			job = e.createContainer(t, sb, "web", "job")
			relist(t, g)
			require.Equal(t, []PodLifecycleEvent{ev(uid, ContainerChanged, job)}, drain(g))
			require.NoError(t, e.rt.RemoveContainer(ctx, job))
		}, func() []PodLifecycleEvent {
			return []PodLifecycleEvent{ev(uid, ContainerDied, job), ev(uid, ContainerRemoved, job)}
		}},
		{"created and exited within one period", func(t *testing.T) {
			job = e.startContainer(t, sb, "web", "job2")
			require.NoError(t, e.sim.ExitContainer(job, 0, ""))
		}, func() []PodLifecycleEvent { return []PodLifecycleEvent{ev(uid, ContainerDied, job)} }},
		{"sandbox stopped", func(t *testing.T) { require.NoError(t, e.rt.StopPodSandbox(ctx, sb)) },
			func() []PodLifecycleEvent { return []PodLifecycleEvent{ev(uid, ContainerDied, sb)} }},
		{"sandbox removed with its exited container", func(t *testing.T) { require.NoError(t, e.rt.RemovePodSandbox(ctx, sb)) },
			func() []PodLifecycleEvent {
				return []PodLifecycleEvent{ev(uid, ContainerRemoved, sb), ev(uid, ContainerRemoved, job)}
			}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.act(t)
			e.clock.Step(time.Second)
			relist(t, g)
			require.Equal(t, sortEvents(st.want()), sortEvents(drain(g)))
		})
	}
	_, ok := g.records[uid]
	require.False(t, ok, "the record of a vanished pod is dropped")
	st, err := g.Cache().Get(uid)
	require.NoError(t, err)
	require.Empty(t, st.SandboxStatuses, "a vanished pod leaves the cache")
}

func TestRelistFiltersContainerChanged(t *testing.T) {
	e := newEnv(t)
	g := e.gen(t, Config{})
	sb := e.runPod(t, "web")
	relist(t, g)
	drain(g)
	e.createContainer(t, sb, "web", "app")
	res := relist(t, g)
	require.Equal(t, 1, res.Inspected, "the change is seen and the status fetched")
	require.Empty(t, drain(g), "ContainerChanged is not delivered by default, like upstream")
	st, _ := g.Cache().Get(uidOf("web"))
	require.Len(t, st.ContainerStatuses, 1)
}

func TestRelistCachesStatus(t *testing.T) {
	e := newEnv(t)
	g := e.gen(t, Config{})
	sb := e.runPod(t, "web")
	app := e.startContainer(t, sb, "web", "app")
	e.clock.Step(time.Second)
	e.startContainer(t, sb, "web", "side")
	other := e.runPod(t, "db")

	now := e.clock.Now()
	res := relist(t, g)
	require.Equal(t, RelistResult{Pods: 2, Inspected: 2, Events: 4}, res)
	require.Equal(t, now, g.Cache().Timestamp())

	st, err := g.Cache().Get(uidOf("web"))
	require.NoError(t, err)
	require.Equal(t, uidOf("web"), st.ID)
	require.Equal(t, "web", st.Name)
	require.Equal(t, "default", st.Namespace)
	require.Equal(t, now, st.Timestamp)
	require.Len(t, st.SandboxStatuses, 1)
	require.Equal(t, sb, st.SandboxStatuses[0].Id)
	require.Len(t, st.IPs, 1)
	require.NotEmpty(t, st.IPs[0])
	require.Len(t, st.ContainerStatuses, 2)
	require.Equal(t, app, st.ContainerStatuses[1].Id, "newest first")
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.ContainerStatuses[0].State)

	// The IP survives the sandbox's teardown.
	require.NoError(t, e.rt.StopPodSandbox(context.Background(), sb))
	relist(t, g)
	st2, _ := g.Cache().Get(uidOf("web"))
	require.Equal(t, st.IPs, st2.IPs)

	// Unchanged pods are not fetched again.
	calls := e.sim.Calls("PodSandboxStatus")
	relist(t, g)
	require.Equal(t, calls, e.sim.Calls("PodSandboxStatus"))
	dbStatus, _ := g.Cache().Get(uidOf("db"))
	require.Equal(t, other, dbStatus.SandboxStatuses[0].Id)
}

func TestRelistStatusFailureIsRetried(t *testing.T) {
	e := newEnv(t)
	g := e.gen(t, Config{})
	sb := e.runPod(t, "web")
	relist(t, g)
	drain(g)

	app := e.startContainer(t, sb, "web", "app")
	e.sim.Inject("ContainerStatus", crisim.Fault{Err: status.Error(codes.Unavailable, "runtime busy"), Times: 1})
	res := relist(t, g)
	require.Equal(t, 1, res.Failed)
	require.Empty(t, drain(g), "no events for a pod whose status is unknown")
	st, err := g.Cache().Get(uidOf("web"))
	require.ErrorContains(t, err, "runtime busy", "waiters see the error")
	require.Nil(t, st, "no partial status next to the error")
	require.NoError(t, g.Healthy(), "a failed status fetch is not a failed relist")

	res = relist(t, g)
	require.Zero(t, res.Failed)
	require.Equal(t, []PodLifecycleEvent{ev(uidOf("web"), ContainerStarted, app)}, drain(g))
	_, err = g.Cache().Get(uidOf("web"))
	require.NoError(t, err)

	// A re-inspection that finds nothing new still syncs the pod.
	e.sim.Inject("PodSandboxStatus", crisim.Fault{Err: status.Error(codes.Internal, "boom"), Times: 1})
	g.records[uidOf("web")].reinspect = true
	relist(t, g)
	require.Empty(t, drain(g))
	relist(t, g)
	require.Equal(t, []PodLifecycleEvent{ev(uidOf("web"), PodSync, "")}, drain(g))

	// A host asks for a reinspection of an unchanged pod: the next relist
	// fetches its status again and syncs it; the one after is quiet.
	calls := e.sim.Calls("ContainerStatus")
	g.RequestReinspect(uidOf("web"))
	g.RequestReinspect("unknown-pod")
	relist(t, g)
	require.Equal(t, []PodLifecycleEvent{ev(uidOf("web"), PodSync, "")}, drain(g))
	require.Greater(t, e.sim.Calls("ContainerStatus"), calls, "status fetched again")
	relist(t, g)
	require.Empty(t, drain(g))
	g.RequestReinspect(uidOf("web"))
	_, err = g.RelistPod(context.Background(), uidOf("web"))
	require.NoError(t, err)
	require.Equal(t, []PodLifecycleEvent{ev(uidOf("web"), PodSync, "")}, drain(g), "a single-pod relist honours it too")
}

func TestReinspectWaitsForAnUnknownPod(t *testing.T) {
	e := newEnv(t)
	g := e.gen(t, Config{})
	relist(t, g)
	g.RequestReinspect(uidOf("web")) // before the runtime has the pod
	relist(t, g)
	require.Empty(t, drain(g))
	require.Contains(t, g.reinspect, uidOf("web"), "kept until the pod appears")

	sb := e.runPod(t, "web")
	calls := e.sim.Calls("PodSandboxStatus")
	relist(t, g)
	require.Equal(t, []PodLifecycleEvent{ev(uidOf("web"), ContainerStarted, sb)}, drain(g))
	require.Empty(t, g.reinspect, "taken by the relist that found the pod")
	require.Greater(t, e.sim.Calls("PodSandboxStatus"), calls, "and the pod inspected")
	relist(t, g)
	require.Empty(t, drain(g))

	// A request for a pod that never appears expires.
	g.RequestReinspect("never")
	e.clock.Step(DefaultRelistThreshold + time.Second)
	relist(t, g)
	require.Empty(t, g.reinspect)
}

func TestRelistListFailure(t *testing.T) {
	e := newEnv(t)
	g := e.gen(t, Config{})
	e.runPod(t, "web")
	e.sim.Inject("ListContainers", crisim.Fault{Err: status.Error(codes.Unavailable, "down"), Times: 1})
	_, err := g.Relist(context.Background())
	require.ErrorContains(t, err, "down")
	require.Empty(t, drain(g))
	require.True(t, g.Cache().Timestamp().IsZero(), "a failed relist does not advance the cache")
	relist(t, g)
	require.Len(t, drain(g), 1)
}

func TestRelistHungRuntimeTimesOut(t *testing.T) {
	e := newEnv(t)
	g := e.gen(t, Config{RuntimeRequestTimeout: time.Second})
	e.runPod(t, "web")
	e.sim.Inject("PodSandboxStatus", crisim.Fault{Latency: time.Hour, Times: 1})

	done := make(chan RelistResult, 1)
	go func() {
		res, err := g.Relist(context.Background())
		require.NoError(t, err)
		done <- res
	}()
	// Our timeout and the injected latency are both waiting.
	require.Eventually(t, func() bool { return e.clock.Waiters() == 2 }, 5*time.Second, time.Millisecond)
	e.clock.Step(time.Second)
	select {
	case res := <-done:
		require.Equal(t, 1, res.Failed)
	case <-time.After(10 * time.Second):
		t.Fatal("Relist hung with the runtime")
	}
	_, err := g.Cache().Get(uidOf("web"))
	require.ErrorContains(t, err, "timed out")
	relist(t, g)
	require.Len(t, drain(g), 1, "the pod's event comes with the next relist")
}

func TestRelistContainerVanishesBeforeStatus(t *testing.T) {
	e := newEnv(t)
	hook := &hookRuntime{RuntimeService: e.rt}
	g := e.gen(t, Config{Runtime: hook})
	sb := e.runPod(t, "web")
	relist(t, g)
	drain(g)

	app := e.startContainer(t, sb, "web", "app")
	hook.afterListContainers = func() {
		hook.afterListContainers = nil
		require.NoError(t, e.rt.RemoveContainer(context.Background(), app))
	}
	res := relist(t, g)
	require.Zero(t, res.Failed)
	require.Equal(t, []PodLifecycleEvent{ev(uidOf("web"), ContainerStarted, app)}, drain(g))
	st, _ := g.Cache().Get(uidOf("web"))
	require.Empty(t, st.ContainerStatuses, "the vanished container is left out")

	relist(t, g)
	require.Equal(t, []PodLifecycleEvent{ev(uidOf("web"), ContainerDied, app), ev(uidOf("web"), ContainerRemoved, app)}, drain(g))
}

func TestRelistParallelismIsBounded(t *testing.T) {
	e := newEnv(t)
	g := e.gen(t, Config{StatusParallelism: 3})
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		e.runPod(t, name)
	}
	e.sim.Inject("PodSandboxStatus", crisim.Fault{Latency: time.Second})
	done := make(chan RelistResult, 1)
	go func() {
		res, err := g.Relist(context.Background())
		require.NoError(t, err)
		done <- res
	}()
	// Three calls wait on the injected latency, each also under a timeout.
	inFlight := func(calls, waiters int) func() bool {
		return func() bool { return e.sim.Calls("PodSandboxStatus") == calls && e.clock.Waiters() == waiters }
	}
	require.Eventually(t, inFlight(3, 6), 5*time.Second, time.Millisecond)
	require.Never(t, func() bool { return e.sim.Calls("PodSandboxStatus") > 3 }, 50*time.Millisecond, 5*time.Millisecond)
	e.clock.Step(time.Second)
	require.Eventually(t, inFlight(5, 4), 5*time.Second, time.Millisecond)
	e.clock.Step(time.Second)
	res := <-done
	require.Equal(t, 5, res.Inspected)
	require.Len(t, drain(g), 5)
}

func TestRelistPod(t *testing.T) {
	e := newEnv(t)
	g := e.gen(t, Config{})
	ctx := context.Background()
	sb := e.runPod(t, "web")
	other := e.runPod(t, "db")
	relist(t, g)
	drain(g)

	app := e.startContainer(t, sb, "web", "app")
	e.startContainer(t, other, "db", "db")
	e.clock.Step(time.Second)
	res, err := g.RelistPod(ctx, uidOf("web"))
	require.NoError(t, err)
	require.Equal(t, 1, res.Inspected)
	require.Equal(t, []PodLifecycleEvent{ev(uidOf("web"), ContainerStarted, app)}, drain(g), "only the pod asked for")

	// A waiter for an unchanged pod is released by a single-pod relist.
	minTime := e.clock.Now()
	errc := waitAsync(g.Cache(), ctx, string(uidOf("web")), minTime)
	requireBlocked(t, g.Cache(), 1, errc)
	e.clock.Step(time.Second)
	_, err = g.RelistPod(ctx, uidOf("web"))
	require.NoError(t, err)
	requireReleased(t, errc, nil)
	require.Empty(t, drain(g))

	// A new pod, then its removal.
	fresh := e.runPod(t, "new")
	_, err = g.RelistPod(ctx, uidOf("new"))
	require.NoError(t, err)
	require.Equal(t, []PodLifecycleEvent{ev(uidOf("new"), ContainerStarted, fresh)}, drain(g))
	require.NoError(t, e.rt.StopPodSandbox(ctx, fresh))
	require.NoError(t, e.rt.RemovePodSandbox(ctx, fresh))
	_, err = g.RelistPod(ctx, uidOf("new"))
	require.NoError(t, err)
	require.Equal(t, []PodLifecycleEvent{ev(uidOf("new"), ContainerDied, fresh), ev(uidOf("new"), ContainerRemoved, fresh)}, drain(g))

	// The full relist agrees: only the other pod's change is left.
	relist(t, g)
	require.Len(t, drain(g), 1)
}

func TestHealthy(t *testing.T) {
	e := newEnv(t)
	g := e.gen(t, Config{})
	err := g.Healthy()
	require.ErrorIs(t, err, ErrUnhealthy)
	require.ErrorContains(t, err, "pleg has yet to be successful")

	relist(t, g)
	require.NoError(t, g.Healthy())

	e.sim.Inject("ListPodSandbox", crisim.Fault{Err: status.Error(codes.Unavailable, "runtime down")})
	e.clock.Step(DefaultRelistThreshold)
	_, err = g.Relist(context.Background())
	require.Error(t, err)
	require.NoError(t, g.Healthy(), "exactly at the threshold is still healthy")
	e.clock.Step(time.Second)
	err = g.Healthy()
	require.ErrorIs(t, err, ErrUnhealthy)
	require.ErrorContains(t, err, "pleg was last seen active 3m1s ago; threshold is 3m0s")
	require.ErrorContains(t, err, "runtime down")

	e.sim.ClearFaults()
	relist(t, g)
	require.NoError(t, g.Healthy())
}

// TestRelistPodAgreesWithFullRelist: a running container whose sandbox is
// not listed belongs to its labelled pod in both kinds of relist — a
// single-pod relist must not report it died and removed.
func TestRelistPodAgreesWithFullRelist(t *testing.T) {
	rt := newFakeRuntime(1, 1)
	uid := rt.sandboxes[0].Metadata.Uid
	rt.containers = append(rt.containers, &runtimeapi.Container{Id: "stray", PodSandboxId: "unlisted",
		State: runtimeapi.ContainerState_CONTAINER_RUNNING, Metadata: &runtimeapi.ContainerMetadata{Name: "x"},
		Labels: map[string]string{PodUIDLabel: uid}})
	g, err := New(Config{Runtime: rt, RuntimeName: "fake"})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = g.Relist(ctx)
	require.NoError(t, err)
	stray := containerid.ID{Type: "fake", ID: "stray"}
	require.Contains(t, drain(g), PodLifecycleEvent{ID: types.UID(uid), Type: ContainerStarted, ContainerID: stray}, "the stray container starts with its pod")
	_, err = g.RelistPod(ctx, types.UID(uid))
	require.NoError(t, err)
	require.Empty(t, drain(g), "nothing changed")
	_, err = g.Relist(ctx)
	require.NoError(t, err)
	require.Empty(t, drain(g))
}

// labelCounter counts the ListContainers calls that filter by label.
type labelCounter struct {
	RuntimeService
	labelled int
}

func (c *labelCounter) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	if len(f.GetLabelSelector()) > 0 {
		c.labelled++
	}
	return c.RuntimeService.ListContainers(ctx, f)
}

// TestRelistPodLabelledListingOnlyWhenNeeded: a single-pod relist of a pod
// whose containers are all in its sandboxes skips the labelled listing (a
// scan of every container in the runtime); it is made for a pod without a
// sandbox and when a known container is missing from the sandboxes.
func TestRelistPodLabelledListingOnlyWhenNeeded(t *testing.T) {
	rt := newFakeRuntime(1, 2)
	uid := types.UID(rt.sandboxes[0].Metadata.Uid)
	c := &labelCounter{RuntimeService: rt}
	g, err := New(Config{Runtime: c, RuntimeName: "fake"})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = g.Relist(ctx)
	require.NoError(t, err)
	drain(g)
	c.labelled = 0

	rt.containers[0].State = runtimeapi.ContainerState_CONTAINER_EXITED
	_, err = g.RelistPod(ctx, uid)
	require.NoError(t, err)
	require.Contains(t, drain(g), PodLifecycleEvent{ID: uid, Type: ContainerDied, ContainerID: containerid.ID{Type: "fake", ID: rt.containers[0].Id}})
	require.Zero(t, c.labelled, "every known container is in the pod's sandbox")

	rt.containers = rt.containers[1:]
	_, err = g.RelistPod(ctx, uid)
	require.NoError(t, err)
	require.Equal(t, 1, c.labelled, "a known container is gone from the sandbox: is it elsewhere?")

	_, err = g.RelistPod(ctx, "unknown")
	require.NoError(t, err)
	require.Equal(t, 2, c.labelled, "no sandbox: only the labels can find the pod's containers")
}
