package eviction

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// podStatsFromCRI lists pod sandbox stats and, for sandboxes that do not
// embed their containers' stats, container stats grouped by pod UID label.
func podStatsFromCRI(ctx context.Context, rt PodStatsLister) ([]statsapi.PodStats, error) {
	sandboxes, err := rt.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{})
	if err != nil {
		return nil, fmt.Errorf("eviction: ListPodSandboxStats: %w", err)
	}
	var byUID map[string][]*runtimeapi.ContainerStats
	out := make([]statsapi.PodStats, 0, len(sandboxes))
	for _, sb := range sandboxes {
		md := sb.GetAttributes().GetMetadata()
		if md == nil {
			continue
		}
		ps := statsapi.PodStats{PodRef: statsapi.PodReference{Name: md.Name, Namespace: md.Namespace, UID: md.Uid}}
		lx := sb.GetLinux()
		ps.Memory = criMemory(lx.GetMemory())
		if pc := lx.GetProcess().GetProcessCount(); pc != nil {
			n := pc.Value
			ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: &n}
		}
		containers := lx.GetContainers()
		if len(containers) == 0 {
			if byUID == nil {
				if byUID, err = containersByPodUID(ctx, rt); err != nil {
					return nil, err
				}
			}
			containers = byUID[md.Uid]
		}
		for _, c := range containers {
			ps.Containers = append(ps.Containers, statsapi.ContainerStats{
				Name:   c.GetAttributes().GetMetadata().GetName(),
				Memory: criMemory(c.GetMemory()),
				Rootfs: criFs(c.GetWritableLayer()),
			})
		}
		out = append(out, ps)
	}
	return out, nil
}

func containersByPodUID(ctx context.Context, rt PodStatsLister) (map[string][]*runtimeapi.ContainerStats, error) {
	cs, err := rt.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		return nil, fmt.Errorf("eviction: ListContainerStats: %w", err)
	}
	out := make(map[string][]*runtimeapi.ContainerStats)
	for _, c := range cs {
		uid := c.GetAttributes().GetLabels()[criPodUIDLabel]
		out[uid] = append(out[uid], c)
	}
	return out, nil
}

func criMemory(m *runtimeapi.MemoryUsage) *statsapi.MemoryStats {
	if m == nil || m.WorkingSetBytes == nil {
		return nil
	}
	ws := m.WorkingSetBytes.Value
	return &statsapi.MemoryStats{
		Time:            metav1.NewTime(time.Unix(0, m.Timestamp)),
		WorkingSetBytes: &ws,
		UsageBytes:      optUint64(m.UsageBytes),
		RSSBytes:        optUint64(m.RssBytes),
	}
}

// optUint64 unwraps an optional CRI value; nil stays nil.
func optUint64(v *runtimeapi.UInt64Value) *uint64 {
	if v == nil {
		return nil
	}
	u := v.Value
	return &u
}

func criFs(fs *runtimeapi.FilesystemUsage) *statsapi.FsStats {
	if fs == nil {
		return nil
	}
	return &statsapi.FsStats{
		Time:       metav1.NewTime(time.Unix(0, fs.Timestamp)),
		UsedBytes:  optUint64(fs.UsedBytes),
		InodesUsed: optUint64(fs.InodesUsed),
	}
}
