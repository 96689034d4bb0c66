package stats

import (
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/internal/diskusage"
)

// podStorage adds the containers' log usage, the volumes' usage and the
// pod's local ephemeral storage to ps. Logs and ephemeral storage carry the
// node filesystem's capacity figures, as the kubelet's.
func (p *Provider) podStorage(ps *statsapi.PodStats, nodeFs *statsapi.FsStats, now metav1.Time) {
	ref := ps.PodRef
	if p.cfg.PodLogsDir != "" {
		dir := filepath.Join(p.cfg.PodLogsDir, ref.Namespace+"_"+ref.Name+"_"+ref.UID)
		for i := range ps.Containers {
			c := &ps.Containers[i]
			if bytes, inodes, err := diskusage.Of(filepath.Join(dir, c.Name)); err == nil {
				c.Logs = withCapacity(&statsapi.FsStats{Time: now, UsedBytes: &bytes, InodesUsed: &inodes}, nodeFs)
			}
		}
	}
	var ephemeral []statsapi.VolumeStats
	if p.cfg.PodVolumes != nil {
		for _, v := range p.cfg.PodVolumes(ref.UID) {
			vs := volumeStats(v)
			ps.VolumeStats = append(ps.VolumeStats, vs)
			if v.LocalEphemeral && v.PVCRef == nil {
				ephemeral = append(ephemeral, vs)
			}
		}
	}
	if p.cfg.PodLogsDir == "" && p.cfg.PodVolumes == nil {
		return // too little known to sum
	}
	var used, inodes uint64
	for _, c := range ps.Containers {
		used += fsUsed(c.Rootfs) + fsUsed(c.Logs)
		inodes += fsInodesUsed(c.Rootfs) + fsInodesUsed(c.Logs)
	}
	for _, v := range ephemeral {
		used += *v.UsedBytes
		inodes += *v.InodesUsed
	}
	ps.EphemeralStorage = withCapacity(&statsapi.FsStats{Time: now, UsedBytes: &used, InodesUsed: &inodes}, nodeFs)
}

// volumeStats is the summary's entry of a pod's volume.
func volumeStats(v PodVolume) statsapi.VolumeStats {
	vs := statsapi.VolumeStats{Name: v.Name, FsStats: statsapi.FsStats{Time: metav1.NewTime(v.Time),
		UsedBytes: ptr.To(v.UsedBytes), InodesUsed: ptr.To(v.InodesUsed)}}
	if v.CapacityBytes != 0 {
		vs.CapacityBytes, vs.AvailableBytes = ptr.To(v.CapacityBytes), ptr.To(v.AvailableBytes)
		vs.Inodes, vs.InodesFree = ptr.To(v.Inodes), ptr.To(v.InodesFree)
	}
	if v.PVCRef != nil {
		vs.PVCRef = &statsapi.PVCReference{Name: v.PVCRef.Name, Namespace: v.PVCRef.Namespace}
	}
	if v.Abnormal != nil {
		vs.VolumeHealthStats = &statsapi.VolumeHealthStats{Abnormal: *v.Abnormal}
	}
	return vs
}

// withCapacity copies fs's capacity and availability figures into s.
func withCapacity(s, fs *statsapi.FsStats) *statsapi.FsStats {
	if fs != nil {
		s.AvailableBytes, s.CapacityBytes = copyU64(fs.AvailableBytes), copyU64(fs.CapacityBytes)
		s.InodesFree, s.Inodes = copyU64(fs.InodesFree), copyU64(fs.Inodes)
	}
	return s
}

func fsUsed(fs *statsapi.FsStats) uint64 {
	if fs == nil || fs.UsedBytes == nil {
		return 0
	}
	return *fs.UsedBytes
}

func fsInodesUsed(fs *statsapi.FsStats) uint64 {
	if fs == nil || fs.InodesUsed == nil {
		return 0
	}
	return *fs.InodesUsed
}
