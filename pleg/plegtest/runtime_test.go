package plegtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/pleg/plegtest"
)

// epoch is where the tests' fake clocks start.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ids returns the IDs of listed sandboxes or containers.
func ids[T interface{ GetId() string }](list []T) []string {
	out := []string{}
	for _, x := range list {
		out = append(out, x.GetId())
	}
	return out
}

// twoPods is a runtime with pod a (sb-1: c-1 running, c-2 exited), pod b
// (sb-2 not ready, c-3 killed) and a container c-4 of pod c, which has no
// sandbox.
func twoPods(t *testing.T) *plegtest.Runtime {
	t.Helper()
	rt := plegtest.New(clocktesting.NewFakeClock(epoch))
	require.Equal(t, "sb-1", rt.RunPod("uid-a", "default", "a"))
	require.Equal(t, "c-1", rt.StartContainer("uid-a", "app"))
	require.Equal(t, "c-2", rt.StartContainer("uid-a", "init"))
	require.NoError(t, rt.ExitContainer("c-2", 0))
	require.Equal(t, "sb-2", rt.RunPod("uid-b", "kube-system", "b"))
	require.Equal(t, "c-3", rt.StartContainer("uid-b", "app"))
	require.NoError(t, rt.StopPod("uid-b"))
	require.Equal(t, "c-4", rt.StartContainer("uid-c", "orphan"))
	return rt
}

func TestListPodSandboxFilters(t *testing.T) {
	rt := twoPods(t)
	ready := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}
	notReady := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}
	for _, tc := range []struct {
		name   string
		filter *runtimeapi.PodSandboxFilter
		want   []string
	}{
		{"nil", nil, []string{"sb-1", "sb-2"}},
		{"empty", &runtimeapi.PodSandboxFilter{}, []string{"sb-1", "sb-2"}},
		{"id", &runtimeapi.PodSandboxFilter{Id: "sb-2"}, []string{"sb-2"}},
		{"unknown id", &runtimeapi.PodSandboxFilter{Id: "sb-9"}, []string{}},
		{"ready", &runtimeapi.PodSandboxFilter{State: ready}, []string{"sb-1"}},
		{"not ready", &runtimeapi.PodSandboxFilter{State: notReady}, []string{"sb-2"}},
		{"uid label", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{pleg.PodUIDLabel: "uid-b"}}, []string{"sb-2"}},
		{"labels all match", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{
			pleg.PodUIDLabel: "uid-a", "io.kubernetes.pod.namespace": "default"}}, []string{"sb-1"}},
		{"one label differs", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{
			pleg.PodUIDLabel: "uid-a", "io.kubernetes.pod.namespace": "kube-system"}}, []string{}},
		{"id and state disagree", &runtimeapi.PodSandboxFilter{Id: "sb-1", State: notReady}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rt.ListPodSandbox(context.Background(), tc.filter)
			require.NoError(t, err)
			require.Equal(t, tc.want, ids(got))
		})
	}
}

func TestListContainersFilters(t *testing.T) {
	rt := twoPods(t)
	state := func(s runtimeapi.ContainerState) *runtimeapi.ContainerStateValue {
		return &runtimeapi.ContainerStateValue{State: s}
	}
	for _, tc := range []struct {
		name   string
		filter *runtimeapi.ContainerFilter
		want   []string
	}{
		{"nil", nil, []string{"c-1", "c-2", "c-3", "c-4"}},
		{"id", &runtimeapi.ContainerFilter{Id: "c-3"}, []string{"c-3"}},
		{"sandbox", &runtimeapi.ContainerFilter{PodSandboxId: "sb-1"}, []string{"c-1", "c-2"}},
		{"unknown sandbox", &runtimeapi.ContainerFilter{PodSandboxId: "sb-9"}, []string{}},
		{"running", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_RUNNING)}, []string{"c-1", "c-4"}},
		{"exited", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_EXITED)}, []string{"c-2", "c-3"}},
		{"uid label", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{pleg.PodUIDLabel: "uid-c"}}, []string{"c-4"}},
		{"container name label", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.container.name": "app"}}, []string{"c-1", "c-3"}},
		{"sandbox and state", &runtimeapi.ContainerFilter{PodSandboxId: "sb-1", State: state(runtimeapi.ContainerState_CONTAINER_EXITED)}, []string{"c-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rt.ListContainers(context.Background(), tc.filter)
			require.NoError(t, err)
			require.Equal(t, tc.want, ids(got))
		})
	}
}

func TestStatuses(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	rt := plegtest.New(clk)
	ctx := context.Background()
	sb := rt.RunPod("uid-web", "default", "web")
	clk.Step(time.Second)
	app := rt.StartContainer("uid-web", "app")
	clk.Step(time.Second)
	require.NoError(t, rt.ExitContainer(app, 3))
	again := rt.StartContainer("uid-web", "app")

	sst, err := rt.PodSandboxStatus(ctx, sb, false)
	require.NoError(t, err)
	require.Equal(t, "web", sst.Status.Metadata.Name)
	require.Equal(t, "default", sst.Status.Metadata.Namespace)
	require.Equal(t, "uid-web", sst.Status.Metadata.Uid)
	require.Equal(t, runtimeapi.PodSandboxState_SANDBOX_READY, sst.Status.State)
	require.Equal(t, epoch.UnixNano(), sst.Status.CreatedAt)
	require.Equal(t, "10.88.0.2", sst.Status.Network.Ip)
	require.Equal(t, "uid-web", sst.Status.Labels[pleg.PodUIDLabel])

	cst, err := rt.ContainerStatus(ctx, app, false)
	require.NoError(t, err)
	st := cst.Status
	require.Equal(t, "app", st.Metadata.Name)
	require.Equal(t, uint32(0), st.Metadata.Attempt)
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
	require.Equal(t, epoch.Add(time.Second).UnixNano(), st.CreatedAt)
	require.Greater(t, st.StartedAt, st.CreatedAt, "timestamps strictly increase while the clock stands still")
	require.Equal(t, epoch.Add(2*time.Second).UnixNano(), st.FinishedAt)
	require.Equal(t, int32(3), st.ExitCode)
	require.Equal(t, "Error", st.Reason)
	require.Equal(t, plegtest.Image, st.Image.Image)
	require.Equal(t, "uid-web", st.Labels[pleg.PodUIDLabel])

	cst, err = rt.ContainerStatus(ctx, again, false)
	require.NoError(t, err)
	require.Equal(t, uint32(1), cst.Status.Metadata.Attempt, "the second container of that name")
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, cst.Status.State)

	list, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: again})
	require.NoError(t, err)
	require.Equal(t, sb, list[0].PodSandboxId)

	// Returned values are copies: changing them changes nothing.
	cst.Status.State = runtimeapi.ContainerState_CONTAINER_EXITED
	cst, err = rt.ContainerStatus(ctx, again, false)
	require.NoError(t, err)
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, cst.Status.State)

	_, err = rt.PodSandboxStatus(ctx, "sb-9", false)
	require.Equal(t, codes.NotFound, status.Code(err))
	_, err = rt.ContainerStatus(ctx, "c-9", false)
	require.Equal(t, codes.NotFound, status.Code(err))
}

func TestNilClockIsFixed(t *testing.T) {
	rt := plegtest.New(nil)
	rt.RunPod("uid-a", "default", "a")
	rt.RunPod("uid-b", "default", "b")
	list, err := rt.ListPodSandbox(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(), list[0].CreatedAt)
	require.Equal(t, list[0].CreatedAt+1, list[1].CreatedAt)
}

func TestDriverLifecycle(t *testing.T) {
	rt := plegtest.New(clocktesting.NewFakeClock(epoch))
	ctx := context.Background()
	rt.RunPod("uid-web", "default", "web")
	app := rt.StartContainer("uid-web", "app")
	side := rt.StartContainer("uid-web", "side")

	require.NoError(t, rt.ExitContainer(app, 0))
	require.ErrorIs(t, rt.ExitContainer(app, 0), plegtest.ErrNotRunning)
	require.ErrorIs(t, rt.ExitContainer("c-9", 0), plegtest.ErrNotFound)
	require.ErrorIs(t, rt.RemoveContainer("c-9"), plegtest.ErrNotFound)
	require.ErrorIs(t, rt.StopPod("uid-none"), plegtest.ErrNotFound)
	require.ErrorIs(t, rt.RemovePod("uid-none"), plegtest.ErrNotFound)

	st, err := rt.ContainerStatus(ctx, app, false)
	require.NoError(t, err)
	require.Equal(t, "Completed", st.Status.Reason)

	require.NoError(t, rt.RemoveContainer(app))
	_, err = rt.ContainerStatus(ctx, app, false)
	require.Equal(t, codes.NotFound, status.Code(err))

	require.NoError(t, rt.StopPod("uid-web"))
	require.NoError(t, rt.StopPod("uid-web"), "stopping a stopped pod is fine")
	st, err = rt.ContainerStatus(ctx, side, false)
	require.NoError(t, err)
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.Status.State)
	require.Equal(t, plegtest.KilledExitCode, st.Status.ExitCode)
	sbs, err := rt.ListPodSandbox(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, sbs[0].State)

	// A new sandbox for the same pod: new containers go there.
	sb2 := rt.RunPod("uid-web", "default", "web")
	require.Equal(t, "sb-2", sb2)
	sbs, err = rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{Id: sb2})
	require.NoError(t, err)
	require.Equal(t, uint32(1), sbs[0].Metadata.Attempt)
	again := rt.StartContainer("uid-web", "app")
	cs, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: sb2})
	require.NoError(t, err)
	require.Equal(t, []string{again}, ids(cs))

	require.NoError(t, rt.RemovePod("uid-web"))
	sbs, err = rt.ListPodSandbox(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, sbs)
	cs, err = rt.ListContainers(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, cs)
}

func TestInjectError(t *testing.T) {
	boom := status.Error(codes.Unavailable, "boom")
	for _, tc := range []struct {
		name  string
		times int
		want  []bool // whether each of 4 calls fails
	}{
		{"once", 1, []bool{true, false, false, false}},
		{"twice", 2, []bool{true, true, false, false}},
		{"forever", -1, []bool{true, true, true, true}},
		{"cleared", 0, []bool{false, false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := plegtest.New(nil)
			rt.InjectError("ListContainers", boom, 3) // replaced below
			rt.InjectError("ListContainers", boom, tc.times)
			for i, fails := range tc.want {
				_, err := rt.ListContainers(context.Background(), nil)
				if fails {
					require.ErrorIs(t, err, boom, "call %d", i)
				} else {
					require.NoError(t, err, "call %d", i)
				}
			}
			require.Equal(t, 4, rt.Calls("ListContainers"))
			require.Zero(t, rt.Calls("ListPodSandbox"))
		})
	}
}

func TestBlockHonoursContext(t *testing.T) {
	rt := plegtest.New(nil)
	rt.RunPod("uid-a", "default", "a")
	rt.Block("PodSandboxStatus", 1)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := rt.PodSandboxStatus(ctx, "sb-1", false)
		errc <- err
	}()
	require.Eventually(t, func() bool { return rt.Calls("PodSandboxStatus") == 1 }, 5*time.Second, time.Millisecond)
	select {
	case err := <-errc:
		t.Fatalf("returned before its context ended: %v", err)
	default:
	}
	cancel()
	require.Equal(t, codes.Canceled, status.Code(<-errc))

	_, err := rt.PodSandboxStatus(context.Background(), "sb-1", false)
	require.NoError(t, err, "blocked once only")
	_, err = rt.PodSandboxStatus(ctx, "sb-1", false)
	require.Equal(t, codes.Canceled, status.Code(err), "an ended context fails the call")
}
