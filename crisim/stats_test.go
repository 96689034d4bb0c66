package crisim

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestContainerStats(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	podID := e.runPod(t, "web")
	app := e.startContainer(t, podID, "app")
	side := e.startContainer(t, podID, "side")
	created := e.createContainer(t, podID, "created")

	appUsage := ContainerUsage{
		CPUUsageNanoCores: 250_000_000, CPUUsageCoreNanoSeconds: 9_000_000_000,
		MemoryWorkingSetBytes: 64 << 20, MemoryRSSBytes: 48 << 20, MemoryUsageBytes: 80 << 20,
		WritableLayerBytes: 4096, WritableLayerInodes: 12,
	}
	require.NoError(t, e.sim.SetContainerStats(app, appUsage))
	require.NoError(t, e.sim.SetContainerStats(side, ContainerUsage{CPUUsageNanoCores: 1_000_000, MemoryWorkingSetBytes: 1 << 20}))

	st, err := e.rt.ContainerStats(ctx, app)
	require.NoError(t, err)
	require.Equal(t, app, st.Attributes.Id)
	require.Equal(t, "app", st.Attributes.Metadata.Name)
	require.Equal(t, map[string]string{"container": "app"}, st.Attributes.Labels)
	require.Equal(t, nanos(epoch), st.Cpu.Timestamp)
	require.Equal(t, appUsage.CPUUsageNanoCores, st.Cpu.UsageNanoCores.Value)
	require.Equal(t, appUsage.CPUUsageCoreNanoSeconds, st.Cpu.UsageCoreNanoSeconds.Value)
	require.Equal(t, appUsage.MemoryWorkingSetBytes, st.Memory.WorkingSetBytes.Value)
	require.Equal(t, appUsage.MemoryRSSBytes, st.Memory.RssBytes.Value)
	require.Equal(t, appUsage.MemoryUsageBytes, st.Memory.UsageBytes.Value)
	require.Equal(t, appUsage.WritableLayerBytes, st.WritableLayer.UsedBytes.Value)
	require.Equal(t, appUsage.WritableLayerInodes, st.WritableLayer.InodesUsed.Value)

	st, err = e.rt.ContainerStats(ctx, created)
	require.NoError(t, err, "stats exist for containers that are not running")
	require.Zero(t, st.Memory.WorkingSetBytes.Value)

	cases := []struct {
		name   string
		filter *runtimeapi.ContainerStatsFilter
		want   []string
	}{
		{"running only", nil, []string{app, side}},
		{"id", &runtimeapi.ContainerStatsFilter{Id: side}, []string{side}},
		{"sandbox", &runtimeapi.ContainerStatsFilter{PodSandboxId: podID}, []string{app, side}},
		{"other sandbox", &runtimeapi.ContainerStatsFilter{PodSandboxId: "other"}, nil},
		{"label", &runtimeapi.ContainerStatsFilter{LabelSelector: map[string]string{"container": "app"}}, []string{app}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stats, err := e.rt.ListContainerStats(ctx, tc.filter)
			require.NoError(t, err)
			var ids []string
			for _, s := range stats {
				ids = append(ids, s.Attributes.Id)
			}
			require.Equal(t, tc.want, ids)
		})
	}
}

func TestPodSandboxStats(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	web := e.runPod(t, "web")
	db := e.runPod(t, "db")
	app := e.startContainer(t, web, "app")
	side := e.startContainer(t, web, "side")
	require.NoError(t, e.sim.SetPodSandboxStats(web, ContainerUsage{CPUUsageNanoCores: 1, MemoryWorkingSetBytes: 100}))
	require.NoError(t, e.sim.SetContainerStats(app, ContainerUsage{CPUUsageNanoCores: 10, MemoryWorkingSetBytes: 1000, MemoryRSSBytes: 7}))
	require.NoError(t, e.sim.SetContainerStats(side, ContainerUsage{CPUUsageNanoCores: 20, MemoryWorkingSetBytes: 2000}))

	st, err := e.rt.PodSandboxStats(ctx, web)
	require.NoError(t, err)
	require.Equal(t, web, st.Attributes.Id)
	require.Equal(t, "web", st.Attributes.Metadata.Name)
	require.Equal(t, uint64(31), st.Linux.Cpu.UsageNanoCores.Value)
	require.Equal(t, uint64(3100), st.Linux.Memory.WorkingSetBytes.Value)
	require.Equal(t, uint64(7), st.Linux.Memory.RssBytes.Value)
	require.Len(t, st.Linux.Containers, 2)

	require.NoError(t, e.sim.ExitContainer(side, 0, ""))
	st, err = e.rt.PodSandboxStats(ctx, web)
	require.NoError(t, err)
	require.Equal(t, uint64(11), st.Linux.Cpu.UsageNanoCores.Value, "exited containers no longer count")
	require.Len(t, st.Linux.Containers, 1)

	all, err := e.rt.ListPodSandboxStats(ctx, nil)
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.NoError(t, e.rt.StopPodSandbox(ctx, db))
	all, err = e.rt.ListPodSandboxStats(ctx, nil)
	require.NoError(t, err)
	require.Len(t, all, 1, "only ready sandboxes are listed")
	labelled, err := e.rt.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{LabelSelector: map[string]string{"app": "web"}})
	require.NoError(t, err)
	require.Len(t, labelled, 1)
	require.Equal(t, web, labelled[0].Attributes.Id)
}

func TestImageFsInfo(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()

	info, err := e.img.ImageFsInfo(ctx)
	require.NoError(t, err)
	require.Len(t, info.ImageFilesystems, 1)
	fs := info.ImageFilesystems[0]
	require.Equal(t, uint64(700_000+5_000_000), fs.UsedBytes.Value, "defaults to the total image size")
	require.Equal(t, uint64(2), fs.InodesUsed.Value)
	require.NotEmpty(t, fs.FsId.Mountpoint)

	e.sim.SetImageFsUsage(FsUsage{UsedBytes: 42 << 30, InodesUsed: 1234})
	info, err = e.img.ImageFsInfo(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(42<<30), info.ImageFilesystems[0].UsedBytes.Value)
	require.Equal(t, uint64(1234), info.ImageFilesystems[0].InodesUsed.Value)
}
