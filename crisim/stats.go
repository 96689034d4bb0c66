package crisim

import (
	"context"
	"maps"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerUsage is the resource usage reported for a container. It is also
// used for the own overhead of a pod sandbox (see SetPodSandboxStats), in
// which case the writable-layer fields are ignored.
type ContainerUsage struct {
	// CPUUsageNanoCores is the current CPU usage in billionths of a core.
	CPUUsageNanoCores uint64
	// CPUUsageCoreNanoSeconds is the cumulative CPU time consumed.
	CPUUsageCoreNanoSeconds uint64
	// MemoryWorkingSetBytes, MemoryRSSBytes and MemoryUsageBytes are the
	// memory figures the kubelet uses for eviction and metrics.
	MemoryWorkingSetBytes uint64
	MemoryRSSBytes        uint64
	MemoryUsageBytes      uint64
	// WritableLayerBytes and WritableLayerInodes are the usage of the
	// container's writable layer.
	WritableLayerBytes  uint64
	WritableLayerInodes uint64
}

func (u ContainerUsage) add(o ContainerUsage) ContainerUsage {
	return ContainerUsage{
		CPUUsageNanoCores:       u.CPUUsageNanoCores + o.CPUUsageNanoCores,
		CPUUsageCoreNanoSeconds: u.CPUUsageCoreNanoSeconds + o.CPUUsageCoreNanoSeconds,
		MemoryWorkingSetBytes:   u.MemoryWorkingSetBytes + o.MemoryWorkingSetBytes,
		MemoryRSSBytes:          u.MemoryRSSBytes + o.MemoryRSSBytes,
		MemoryUsageBytes:        u.MemoryUsageBytes + o.MemoryUsageBytes,
		WritableLayerBytes:      u.WritableLayerBytes + o.WritableLayerBytes,
		WritableLayerInodes:     u.WritableLayerInodes + o.WritableLayerInodes,
	}
}

func (u ContainerUsage) cpu(now int64) *runtimeapi.CpuUsage {
	return &runtimeapi.CpuUsage{
		Timestamp:            now,
		UsageNanoCores:       u64(u.CPUUsageNanoCores),
		UsageCoreNanoSeconds: u64(u.CPUUsageCoreNanoSeconds),
	}
}

func (u ContainerUsage) memory(now int64) *runtimeapi.MemoryUsage {
	return &runtimeapi.MemoryUsage{
		Timestamp:       now,
		WorkingSetBytes: u64(u.MemoryWorkingSetBytes),
		RssBytes:        u64(u.MemoryRSSBytes),
		UsageBytes:      u64(u.MemoryUsageBytes),
	}
}

func u64(v uint64) *runtimeapi.UInt64Value {
	return &runtimeapi.UInt64Value{Value: v}
}

// FsUsage is the usage of a filesystem.
type FsUsage struct {
	// UsedBytes is the space used, in bytes.
	UsedBytes uint64
	// InodesUsed is the number of inodes used.
	InodesUsed uint64
}

func (u FsUsage) report(now int64, mountpoint string) *runtimeapi.FilesystemUsage {
	return &runtimeapi.FilesystemUsage{
		Timestamp:  now,
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: mountpoint},
		UsedBytes:  u64(u.UsedBytes),
		InodesUsed: u64(u.InodesUsed),
	}
}

// SetContainerStats sets the usage ContainerStats reports for a container.
func (s *Sim) SetContainerStats(id string, u ContainerUsage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[id]
	if !ok {
		return notFound("container", id)
	}
	c.usage = u
	return nil
}

// SetPodSandboxStats sets the sandbox's own CPU and memory usage (the pause
// container). PodSandboxStats reports it plus the usage of the sandbox's
// running containers.
func (s *Sim) SetPodSandboxStats(id string, u ContainerUsage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[id]
	if !ok {
		return notFound("pod sandbox", id)
	}
	sb.usage = u
	return nil
}

func (c *container) stats(now int64) *runtimeapi.ContainerStats {
	return &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{
			Id:          c.id,
			Metadata:    c.metadata(),
			Labels:      maps.Clone(c.labels),
			Annotations: maps.Clone(c.annotations),
		},
		Cpu:    c.usage.cpu(now),
		Memory: c.usage.memory(now),
		WritableLayer: FsUsage{
			UsedBytes:  c.usage.WritableLayerBytes,
			InodesUsed: c.usage.WritableLayerInodes,
		}.report(now, containerFsMountpoint),
	}
}

func (s *Sim) podStatsLocked(sb *sandbox, now int64) *runtimeapi.PodSandboxStats {
	total := sb.usage
	var containers []*runtimeapi.ContainerStats
	for _, c := range s.containersOfLocked(sb.id) {
		if c.running() {
			total = total.add(c.usage)
			containers = append(containers, c.stats(now))
		}
	}
	return &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{
			Id:          sb.id,
			Metadata:    sb.metadata(),
			Labels:      maps.Clone(sb.labels),
			Annotations: maps.Clone(sb.annotations),
		},
		Linux: &runtimeapi.LinuxPodSandboxStats{
			Cpu:        total.cpu(now),
			Memory:     total.memory(now),
			Containers: containers,
		},
	}
}

func (s *Sim) listContainerStats(f *runtimeapi.ContainerStatsFilter) []*runtimeapi.ContainerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowNano()
	var out []*runtimeapi.ContainerStats
	for _, c := range s.containersLocked(func(c *container) bool {
		return c.running() &&
			(f.GetId() == "" || f.GetId() == c.id) &&
			(f.GetPodSandboxId() == "" || f.GetPodSandboxId() == c.sandboxID) &&
			matchLabels(c.labels, f.GetLabelSelector())
	}) {
		out = append(out, c.stats(now))
	}
	return out
}

func (s *Sim) listPodSandboxStats(f *runtimeapi.PodSandboxStatsFilter) []*runtimeapi.PodSandboxStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowNano()
	var out []*runtimeapi.PodSandboxStats
	for _, sb := range s.sandboxesLocked(func(sb *sandbox) bool {
		return sb.state == runtimeapi.PodSandboxState_SANDBOX_READY &&
			(f.GetId() == "" || f.GetId() == sb.id) &&
			matchLabels(sb.labels, f.GetLabelSelector())
	}) {
		out = append(out, s.podStatsLocked(sb, now))
	}
	return out
}

// ContainerStats returns the usage set with SetContainerStats (zero by
// default) for any existing container.
func (r *runtimeService) ContainerStats(_ context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	s := r.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[req.ContainerId]
	if !ok {
		return nil, notFound("container", req.ContainerId)
	}
	return &runtimeapi.ContainerStatsResponse{Stats: c.stats(s.nowNano())}, nil
}

// ListContainerStats returns the stats of the running containers matching
// the filter.
func (r *runtimeService) ListContainerStats(_ context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	return &runtimeapi.ListContainerStatsResponse{Stats: r.sim.listContainerStats(req.Filter)}, nil
}

// StreamContainerStats streams what ListContainerStats returns, in chunks.
func (r *runtimeService) StreamContainerStats(req *runtimeapi.StreamContainerStatsRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamContainerStatsResponse]) error {
	return sendChunks(r.sim.cfg.StreamChunkSize, r.sim.listContainerStats(req.Filter), func(items []*runtimeapi.ContainerStats) error {
		return stream.Send(&runtimeapi.StreamContainerStatsResponse{ContainerStats: items})
	})
}

// PodSandboxStats returns the usage of a sandbox: its own usage plus that
// of its running containers, whose stats are included.
func (r *runtimeService) PodSandboxStats(_ context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	s := r.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[req.PodSandboxId]
	if !ok {
		return nil, notFound("pod sandbox", req.PodSandboxId)
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: s.podStatsLocked(sb, s.nowNano())}, nil
}

// ListPodSandboxStats returns the stats of the READY sandboxes matching the
// filter.
func (r *runtimeService) ListPodSandboxStats(_ context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: r.sim.listPodSandboxStats(req.Filter)}, nil
}

// StreamPodSandboxStats streams what ListPodSandboxStats returns, in chunks.
func (r *runtimeService) StreamPodSandboxStats(req *runtimeapi.StreamPodSandboxStatsRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxStatsResponse]) error {
	return sendChunks(r.sim.cfg.StreamChunkSize, r.sim.listPodSandboxStats(req.Filter), func(items []*runtimeapi.PodSandboxStats) error {
		return stream.Send(&runtimeapi.StreamPodSandboxStatsResponse{PodSandboxStats: items})
	})
}
