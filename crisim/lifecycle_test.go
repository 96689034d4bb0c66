package crisim

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()

	podID := e.runPod(t, "web")
	require.Len(t, podID, 64)
	pod, err := e.rt.PodSandboxStatus(ctx, podID, false)
	require.NoError(t, err)
	require.Equal(t, runtimeapi.PodSandboxState_SANDBOX_READY, pod.Status.State)
	require.Equal(t, nanos(epoch), pod.Status.CreatedAt)
	require.Equal(t, "web", pod.Status.Metadata.Name)
	require.Equal(t, map[string]string{"app": "web"}, pod.Status.Labels)
	require.Equal(t, map[string]string{"note": "pod web"}, pod.Status.Annotations)
	require.NotEmpty(t, pod.Status.Network.Ip)

	e.clock.Step(time.Second)
	ctrID := e.createContainer(t, podID, "app")
	st := e.containerStatus(t, ctrID)
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_CREATED, st.State)
	require.Equal(t, nanos(epoch.Add(time.Second)), st.CreatedAt)
	require.Zero(t, st.StartedAt)
	require.Equal(t, "app", st.Metadata.Name)
	require.Equal(t, uint32(1), st.Metadata.Attempt)
	require.Equal(t, appImage, st.Image.Image)
	require.Contains(t, st.ImageRef, "example.com/app@sha256:")
	require.Equal(t, map[string]string{"container": "app"}, st.Labels)
	require.Equal(t, map[string]string{"note": "container app"}, st.Annotations)
	require.Equal(t, filepath.Join(logRoot, "default_web", "app", "1.log"), st.LogPath)

	e.clock.Step(time.Second)
	require.NoError(t, e.rt.StartContainer(ctx, ctrID))
	st = e.containerStatus(t, ctrID)
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.State)
	require.Equal(t, nanos(epoch.Add(2*time.Second)), st.StartedAt)
	requireCode(t, codes.FailedPrecondition, e.rt.StartContainer(ctx, ctrID))

	e.clock.Step(time.Second)
	require.NoError(t, e.rt.StopContainer(ctx, ctrID, 10))
	st = e.containerStatus(t, ctrID)
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
	require.Equal(t, nanos(epoch.Add(3*time.Second)), st.FinishedAt)
	require.Equal(t, int32(0), st.ExitCode)
	require.Equal(t, "Completed", st.Reason)
	require.NoError(t, e.rt.StopContainer(ctx, ctrID, 10), "stopping an exited container is a no-op")

	sideID := e.startContainer(t, podID, "side")
	require.NoError(t, e.rt.StopPodSandbox(ctx, podID))
	pod, err = e.rt.PodSandboxStatus(ctx, podID, false)
	require.NoError(t, err)
	require.Equal(t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, pod.Status.State)
	require.Len(t, pod.ContainersStatuses, 2)
	side := e.containerStatus(t, sideID)
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, side.State)
	require.Equal(t, int32(137), side.ExitCode)
	require.NoError(t, e.rt.StopPodSandbox(ctx, podID), "stopping a stopped sandbox is a no-op")

	_, err = e.rt.CreateContainer(ctx, podID, containerConfig("late"), nil)
	requireCode(t, codes.FailedPrecondition, err)

	require.NoError(t, e.rt.RemovePodSandbox(ctx, podID))
	ctrs, err := e.rt.ListContainers(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, ctrs, "RemovePodSandbox removes its containers")
	_, err = e.rt.PodSandboxStatus(ctx, podID, false)
	requireCode(t, codes.NotFound, err)
	require.NoError(t, e.rt.RemovePodSandbox(ctx, podID), "RemovePodSandbox is idempotent")
}

func TestRemoveRunningContainerForceStops(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.sim.Script(Match{}, Script{ExitAfter: time.Hour})
	podID := e.runPod(t, "web")
	id := e.startContainer(t, podID, "app")
	require.True(t, e.clock.HasWaiters(), "the scripted exit is armed")

	require.NoError(t, e.rt.RemoveContainer(ctx, id))
	_, err := e.rt.ContainerStatus(ctx, id, false)
	requireCode(t, codes.NotFound, err)
	require.False(t, e.clock.HasWaiters(), "no exit timer survives removal")
	require.NoError(t, e.rt.RemoveContainer(ctx, id), "RemoveContainer is idempotent")
}

func TestNotFound(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const missing = "0123456789abcdef"

	for name, call := range map[string]func() error{
		"PodSandboxStatus": func() error { _, err := e.rt.PodSandboxStatus(ctx, missing, false); return err },
		"StopPodSandbox":   func() error { return e.rt.StopPodSandbox(ctx, missing) },
		"CreateContainer": func() error {
			_, err := e.rt.CreateContainer(ctx, missing, containerConfig("app"), nil)
			return err
		},
		"StartContainer":           func() error { return e.rt.StartContainer(ctx, missing) },
		"StopContainer":            func() error { return e.rt.StopContainer(ctx, missing, 1) },
		"ContainerStatus":          func() error { _, err := e.rt.ContainerStatus(ctx, missing, false); return err },
		"ContainerStats":           func() error { _, err := e.rt.ContainerStats(ctx, missing); return err },
		"PodSandboxStats":          func() error { _, err := e.rt.PodSandboxStats(ctx, missing); return err },
		"ExecSync":                 func() error { _, _, err := e.rt.ExecSync(ctx, missing, []string{"true"}, time.Second); return err },
		"ReopenContainerLog":       func() error { return e.rt.ReopenContainerLog(ctx, missing) },
		"UpdateContainerResources": func() error { return e.rt.UpdateContainerResources(ctx, missing, &runtimeapi.ContainerResources{}) },
		"Sim.ExitContainer":        func() error { return e.sim.ExitContainer(missing, 1, "") },
		"Sim.SetContainerStats":    func() error { return e.sim.SetContainerStats(missing, ContainerUsage{}) },
		"Sim.SetPodSandboxStats":   func() error { return e.sim.SetPodSandboxStats(missing, ContainerUsage{}) },
	} {
		t.Run(name, func(t *testing.T) { requireCode(t, codes.NotFound, call()) })
	}

	for name, call := range map[string]func() error{
		"RemovePodSandbox": func() error { return e.rt.RemovePodSandbox(ctx, missing) },
		"RemoveContainer":  func() error { return e.rt.RemoveContainer(ctx, missing) },
		"RemoveImage":      func() error { return e.img.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: "nope:1"}) },
	} {
		t.Run(name+"/idempotent", func(t *testing.T) { require.NoError(t, call()) })
	}
}

func TestInvalidAndDuplicate(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	podID := e.runPod(t, "web")
	e.createContainer(t, podID, "app")

	_, err := e.rt.RunPodSandbox(ctx, podConfig("web"), "")
	requireCode(t, codes.AlreadyExists, err)
	_, err = e.rt.CreateContainer(ctx, podID, containerConfig("app"), nil)
	requireCode(t, codes.AlreadyExists, err)

	_, err = e.rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "x"}}, "")
	requireCode(t, codes.InvalidArgument, err)
	noImage := containerConfig("other")
	noImage.Image = nil
	_, err = e.rt.CreateContainer(ctx, podID, noImage, nil)
	requireCode(t, codes.InvalidArgument, err)

	unknownImage := containerConfig("other")
	unknownImage.Image = &runtimeapi.ImageSpec{Image: "example.com/missing:v1"}
	_, err = e.rt.CreateContainer(ctx, podID, unknownImage, nil)
	requireCode(t, codes.NotFound, err)
}

func TestListFilters(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	webID := e.runPod(t, "web")
	dbID := e.runPod(t, "db")
	created := e.createContainer(t, webID, "created")
	running := e.startContainer(t, webID, "running")
	exited := e.startContainer(t, dbID, "exited")
	require.NoError(t, e.rt.StopContainer(ctx, exited, 0))
	require.NoError(t, e.rt.StopPodSandbox(ctx, dbID))

	containerCases := []struct {
		name   string
		filter *runtimeapi.ContainerFilter
		want   []string
	}{
		{"none", nil, []string{created, running, exited}},
		{"id", &runtimeapi.ContainerFilter{Id: running}, []string{running}},
		{"sandbox", &runtimeapi.ContainerFilter{PodSandboxId: webID}, []string{created, running}},
		{"state", &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_EXITED}}, []string{exited}},
		{"created state", &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_CREATED}}, []string{created}},
		{"label", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"container": "running"}}, []string{running}},
		{"label miss", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"container": "nope"}}, nil},
		{"sandbox and state", &runtimeapi.ContainerFilter{PodSandboxId: dbID, State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}, nil},
	}
	for _, tc := range containerCases {
		t.Run("containers/"+tc.name, func(t *testing.T) {
			got, err := e.rt.ListContainers(ctx, tc.filter)
			require.NoError(t, err)
			var ids []string
			for _, c := range got {
				ids = append(ids, c.Id)
			}
			require.Equal(t, tc.want, ids)
		})
	}

	sandboxCases := []struct {
		name   string
		filter *runtimeapi.PodSandboxFilter
		want   []string
	}{
		{"none", nil, []string{webID, dbID}},
		{"id", &runtimeapi.PodSandboxFilter{Id: dbID}, []string{dbID}},
		{"ready", &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}, []string{webID}},
		{"notready", &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}}, []string{dbID}},
		{"label", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "db"}}, []string{dbID}},
	}
	for _, tc := range sandboxCases {
		t.Run("sandboxes/"+tc.name, func(t *testing.T) {
			got, err := e.rt.ListPodSandbox(ctx, tc.filter)
			require.NoError(t, err)
			var ids []string
			for _, sb := range got {
				ids = append(ids, sb.Id)
			}
			require.Equal(t, tc.want, ids)
		})
	}
}

func TestUpdateResourcesAndReopenLog(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	podID := e.runPod(t, "web")
	id := e.startContainer(t, podID, "app")

	res := &runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{CpuShares: 512, MemoryLimitInBytes: 1 << 30}}
	require.NoError(t, e.rt.UpdateContainerResources(ctx, id, res))
	st := e.containerStatus(t, id)
	require.Equal(t, int64(512), st.Resources.Linux.CpuShares)
	require.Equal(t, int64(1<<30), st.Resources.Linux.MemoryLimitInBytes)

	require.NoError(t, e.rt.ReopenContainerLog(ctx, id))
	require.NoError(t, e.sim.ExitContainer(id, 137, "OOMKilled"))
	requireCode(t, codes.FailedPrecondition, e.rt.ReopenContainerLog(ctx, id))
	requireCode(t, codes.FailedPrecondition, e.rt.UpdateContainerResources(ctx, id, res))
}

// TestContainerUser: a container reports its process's user as containerd
// does: the security context's user and group, root without them, the
// group first among the supplementary groups.
func TestContainerUser(t *testing.T) {
	e := newEnv(t)
	pod := e.runPod(t, "p")
	root := e.containerStatus(t, e.createContainer(t, pod, "root")).GetUser().GetLinux()
	require.Equal(t, &runtimeapi.LinuxContainerUser{Uid: 0, Gid: 0, SupplementalGroups: []int64{0}}, root)

	cfg := containerConfig("app")
	cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
		RunAsUser: &runtimeapi.Int64Value{Value: 1000}, RunAsGroup: &runtimeapi.Int64Value{Value: 3000},
		SupplementalGroups: []int64{4000, 3000}}}
	id, err := e.rt.CreateContainer(context.Background(), pod, cfg, podConfig("p"))
	require.NoError(t, err)
	got := e.containerStatus(t, id).GetUser().GetLinux()
	require.Equal(t, &runtimeapi.LinuxContainerUser{Uid: 1000, Gid: 3000, SupplementalGroups: []int64{3000, 4000}}, got)
}
