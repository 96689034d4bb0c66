package eviction

import (
	"cmp"
	"slices"

	v1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// StatsFunc returns the usage statistics of a pod, if known.
type StatsFunc func(pod *v1.Pod) (*statsapi.PodStats, bool)

// statsByUID indexes a summary's pod stats by pod UID.
func statsByUID(pods []statsapi.PodStats) StatsFunc {
	idx := make(map[string]*statsapi.PodStats, len(pods))
	for i := range pods {
		idx[pods[i].PodRef.UID] = &pods[i]
	}
	return func(p *v1.Pod) (*statsapi.PodStats, bool) {
		s, ok := idx[string(p.UID)]
		return s, ok
	}
}

// fsParts selects which parts of a pod's storage count for a disk signal.
type fsParts struct{ rootfs, logs, volumes bool }

// rankKey holds what ranking compares, computed once per pod.
type rankKey struct {
	pod      *v1.Pod
	noStats  bool
	exceeds  bool
	priority int32
	usage    int64 // usage (minus request, for memory and disk)
}

// RankForEviction orders pods (in place) in the order upstream kubelet
// would evict them to relieve signal:
//   - memory: pods without stats, then pods using more than their memory
//     request, then by ascending priority, then by descending usage above
//     request;
//   - disk (bytes or inodes): the same with local storage usage (the parts
//     that live on the pressured filesystem) and ephemeral-storage request;
//   - PIDs: by ascending priority, then pods without stats, then by
//     descending process count.
//
// dedicatedImageFs and splitContainerFs describe the filesystem layout, as
// in Config. The sort is stable. An unknown signal leaves pods unchanged.
func RankForEviction(pods []*v1.Pod, signal Signal, stats StatsFunc, dedicatedImageFs, splitContainerFs bool) {
	keys := make([]rankKey, len(pods))
	res := signal.Resource()
	parts := diskParts(signal, dedicatedImageFs, splitContainerFs)
	for i, p := range pods {
		k := rankKey{pod: p, priority: podPriority(p)}
		s, ok := stats(p)
		k.noStats = !ok
		if ok {
			switch res {
			case v1.ResourceMemory:
				k.usage = memoryUsage(s.Memory)
				req := podRequest(p, v1.ResourceMemory)
				k.exceeds = k.usage > req
				k.usage -= req
			case v1.ResourceEphemeralStorage, ResourceInodes:
				bytes, inodes := podDiskUsage(p, s, parts)
				k.usage = bytes
				if res == ResourceInodes {
					k.usage = inodes
				}
				// Upstream compares inode usage with the (always zero)
				// inode request, but subtracts the ephemeral-storage
				// request from both; kept for identical rankings.
				k.exceeds = k.usage > podRequestFor(p, res)
				k.usage -= podRequest(p, v1.ResourceEphemeralStorage)
			case ResourcePIDs:
				if s.ProcessStats != nil && s.ProcessStats.ProcessCount != nil {
					k.usage = int64(*s.ProcessStats.ProcessCount)
				}
			default:
				return
			}
		}
		keys[i] = k
	}
	if res == ResourcePIDs {
		slices.SortStableFunc(keys, func(a, b rankKey) int {
			return cmp.Or(cmp.Compare(a.priority, b.priority), trueFirst(a.noStats, b.noStats), cmp.Compare(b.usage, a.usage))
		})
	} else {
		slices.SortStableFunc(keys, func(a, b rankKey) int {
			return cmp.Or(trueFirst(a.noStats, b.noStats), trueFirst(a.exceeds, b.exceeds),
				cmp.Compare(a.priority, b.priority), cmp.Compare(b.usage, a.usage))
		})
	}
	for i := range keys {
		pods[i] = keys[i].pod
	}
}

func podRequestFor(p *v1.Pod, res v1.ResourceName) int64 {
	if res == ResourceInodes {
		return 0
	}
	return podRequest(p, res)
}

// trueFirst orders true before false.
func trueFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// diskParts returns which storage counts towards a disk signal for the
// filesystem layout, following upstream's ranking functions.
func diskParts(s Signal, dedicatedImageFs, splitContainerFs bool) fsParts {
	all := fsParts{rootfs: true, logs: true, volumes: true}
	switch {
	case dedicatedImageFs && !splitContainerFs:
		switch s {
		case SignalNodeFsAvailable, SignalNodeFsInodesFree:
			return fsParts{logs: true, volumes: true}
		default: // imagefs and containerfs hold the writable layers
			return fsParts{rootfs: true}
		}
	case dedicatedImageFs && splitContainerFs:
		switch s {
		case SignalImageFsAvailable, SignalImageFsInodesFree:
			return fsParts{} // only image layers, which pods do not own
		default:
			return all
		}
	}
	return all
}

func memoryUsage(m *statsapi.MemoryStats) int64 {
	if m == nil || m.WorkingSetBytes == nil {
		return 0
	}
	return int64(*m.WorkingSetBytes)
}

func fsUsage(fs *statsapi.FsStats) (bytes, inodes int64) {
	if fs == nil {
		return 0, 0
	}
	if fs.UsedBytes != nil {
		bytes = int64(*fs.UsedBytes)
	}
	if fs.InodesUsed != nil {
		inodes = int64(*fs.InodesUsed)
	}
	return bytes, inodes
}

// podDiskUsage sums the selected storage parts of a pod: container writable
// layers, container logs and local volumes (hostPath, disk-backed emptyDir,
// gitRepo, configMap).
func podDiskUsage(p *v1.Pod, s *statsapi.PodStats, parts fsParts) (bytes, inodes int64) {
	add := func(fs *statsapi.FsStats) {
		b, i := fsUsage(fs)
		bytes += b
		inodes += i
	}
	for i := range s.Containers {
		if parts.rootfs {
			add(s.Containers[i].Rootfs)
		}
		if parts.logs {
			add(s.Containers[i].Logs)
		}
	}
	if !parts.volumes {
		return bytes, inodes
	}
	for i := range p.Spec.Volumes {
		v := &p.Spec.Volumes[i]
		local := v.HostPath != nil || v.GitRepo != nil || v.ConfigMap != nil ||
			(v.EmptyDir != nil && v.EmptyDir.Medium == v1.StorageMediumDefault)
		if !local {
			continue
		}
		for j := range s.VolumeStats {
			if s.VolumeStats[j].Name == v.Name {
				add(&s.VolumeStats[j].FsStats)
				break
			}
		}
	}
	return bytes, inodes
}
