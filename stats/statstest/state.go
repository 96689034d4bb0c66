package statstest

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Pod describes a running pod for State.AddPod.
type Pod struct {
	// Name, Namespace and UID are the sandbox's metadata.
	Name, Namespace, UID string
	// CreatedAt is the sandbox's creation time in Unix nanoseconds; each
	// container is created a nanosecond later than the previous one.
	CreatedAt int64
	// Containers are the names of its running containers.
	Containers []string
	// Embed puts the containers' stats inside the sandbox stats, as
	// containerd does; otherwise they are only in ListContainerStats.
	Embed bool
}

// SandboxID is the ID AddPod gives the sandbox of the pod with uid.
func SandboxID(uid string) string { return "sb-" + uid }

// ContainerID is the ID AddPod gives container name of the pod with uid.
func ContainerID(uid, name string) string { return "c-" + uid + "-" + name }

// AddPod adds a ready sandbox with running containers and empty stats
// entries for each (Cpu, Memory and the rest nil); set their figures
// through SandboxStatsOf and ContainerStatsOf.
func (s *State) AddPod(p Pod) {
	sbID := SandboxID(p.UID)
	md := &runtimeapi.PodSandboxMetadata{Name: p.Name, Namespace: p.Namespace, Uid: p.UID}
	s.Sandboxes = append(s.Sandboxes, &runtimeapi.PodSandbox{Id: sbID, Metadata: md,
		State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: p.CreatedAt})
	sbStats := &runtimeapi.PodSandboxStats{Attributes: &runtimeapi.PodSandboxAttributes{Id: sbID, Metadata: md},
		Linux: &runtimeapi.LinuxPodSandboxStats{}}
	for i, name := range p.Containers {
		id := ContainerID(p.UID, name)
		cmd := &runtimeapi.ContainerMetadata{Name: name}
		labels := map[string]string{"io.kubernetes.pod.uid": p.UID, "io.kubernetes.container.name": name}
		s.Containers = append(s.Containers, &runtimeapi.Container{Id: id, PodSandboxId: sbID, Metadata: cmd,
			State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: p.CreatedAt + int64(i) + 1, Labels: labels})
		cs := &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{Id: id, Metadata: cmd, Labels: labels}}
		s.ContainerStats = append(s.ContainerStats, cs)
		if p.Embed {
			sbStats.Linux.Containers = append(sbStats.Linux.Containers, cs)
		}
	}
	s.SandboxStats = append(s.SandboxStats, sbStats)
}

// SandboxStatsOf is the stats entry of a sandbox, nil if none.
func (s *State) SandboxStatsOf(id string) *runtimeapi.PodSandboxStats {
	for _, st := range s.SandboxStats {
		if st.GetAttributes().GetId() == id {
			return st
		}
	}
	return nil
}

// ContainerStatsOf is the stats entry of a container, nil if none. With
// Embed the same entry is inside its sandbox's stats.
func (s *State) ContainerStatsOf(id string) *runtimeapi.ContainerStats {
	for _, st := range s.ContainerStats {
		if st.GetAttributes().GetId() == id {
			return st
		}
	}
	return nil
}

// ContainerOf is a container, nil if none.
func (s *State) ContainerOf(id string) *runtimeapi.Container {
	for _, c := range s.Containers {
		if c.Id == id {
			return c
		}
	}
	return nil
}

// CPU is a CRI CPU usage sample: cumulative core-nanoseconds at a Unix
// nanosecond timestamp, without usageNanoCores.
func CPU(at int64, coreNanoSeconds uint64) *runtimeapi.CpuUsage {
	return &runtimeapi.CpuUsage{Timestamp: at, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: coreNanoSeconds}}
}

// Memory is a CRI memory usage sample with a working set.
func Memory(at int64, workingSet uint64) *runtimeapi.MemoryUsage {
	return &runtimeapi.MemoryUsage{Timestamp: at, WorkingSetBytes: &runtimeapi.UInt64Value{Value: workingSet}}
}
