package volumes

import (
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/internal/diskusage"
)

// DefaultUsagePeriod is how long a pod's measured volume usage is served
// before its volumes are walked again: the kubelet's volume stats period
// (volumeStatsAggPeriod).
const DefaultUsagePeriod = time.Minute

// DefaultUsageTimeout is how long Usage waits for the filesystem of a
// persistent volume to answer statfs: half of Prometheus's default scrape
// timeout and of the eviction manager's period, both of which wait on
// Usage.
const DefaultUsageTimeout = 5 * time.Second

// VolumeUsage is what one volume of a pod holds on the node, and the
// filesystem it is on.
type VolumeUsage struct {
	// Name is the volume's name in the pod spec.
	Name string
	// UsedBytes and InodesUsed are what the volume holds: for a volume in
	// the pod's directory, what a du walk of it counts; for a persistent
	// volume, what its filesystem has in use.
	UsedBytes, InodesUsed uint64
	// CapacityBytes, AvailableBytes, Inodes and InodesFree describe the
	// filesystem the volume is on, as statfs reports it: the node's for a
	// volume in the pod's directory (a tmpfs's for one in memory), the
	// volume's own for a persistent volume.
	CapacityBytes, AvailableBytes, Inodes, InodesFree uint64
	// PVC is the claim of a persistentVolumeClaim or generic ephemeral
	// volume (<pod>-<volume>), in the pod's namespace; nil for the others.
	PVC *types.NamespacedName
	// LocalEphemeral: the volume counts toward the pod's local ephemeral
	// storage (the kubelet's rule: a disk-backed emptyDir or a configMap).
	LocalEphemeral bool
	// Time is when it was measured.
	Time time.Time
}

type usageCache struct {
	at  time.Time
	out []VolumeUsage
}

// claimMount is a claim mounted for a pod, and a path on the volume's
// filesystem ("" when the volume has no statistics: a hostPath
// PersistentVolume, as the kubelet's hostPath plugin has none).
type claimMount struct {
	claim types.NamespacedName
	path  string
}

// mountedClaim records the claim of a pod's volume, mounted by mnt.
func (m *Manager) mountedClaim(pod *v1.Pod, volume, claim string, pv *v1.PersistentVolume, mnt Mount) {
	c := claimMount{claim: types.NamespacedName{Namespace: pod.Namespace, Name: claim}, path: mnt.HostPath}
	if pv.Spec.HostPath != nil && m.persistentPluginFor(pv) == nil {
		c.path = ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.claims[pod.UID] == nil {
		m.claims[pod.UID] = map[string]claimMount{}
	}
	m.claims[pod.UID][volume] = c
}

// Usage measures the volumes of a pod set up since the Manager started,
// served from the last measurement for Config.UsagePeriod:
//
//   - the volumes the Manager keeps in the pod's directory (emptyDir,
//     configMap, secret, downwardAPI, projected, and a host plugin's): a
//     walk of each volume's directory within its filesystem, files counted
//     by their allocated blocks, and the figures of that filesystem;
//   - the persistent volumes (persistentVolumeClaim and generic
//     ephemeral volumes) mounted: the figures of the volume's filesystem
//     at its mount (a local volume's path, a CSI volume's publish path),
//     as the kubelet's MetricsStatFS, with the claim. A hostPath
//     PersistentVolume has none, as on the kubelet; neither have inline
//     hostPath volumes.
//
// The measurement runs in the caller's goroutine, but waits for no
// persistent volume's filesystem longer than Config.UsageTimeout: one that
// does not answer (a hung network mount) is left out, and not asked again
// until its pending statfs returns. Unknown pods have none.
func (m *Manager) Usage(uid types.UID) []VolumeUsage {
	now := m.cfg.Clock.Now()
	m.mu.Lock()
	vols, known := m.volumesOf[uid]
	cached, fresh := m.usage[uid]
	claims := maps.Clone(m.claims[uid])
	m.mu.Unlock()
	if !known {
		return nil
	}
	if fresh && now.Sub(cached.at) < m.cfg.UsagePeriod {
		return cached.out
	}
	var out []VolumeUsage
	for i := range vols {
		v := &vols[i]
		u, ok := m.measure(uid, v, claims)
		if !ok {
			continue
		}
		u.Name, u.Time = v.Name, now
		out = append(out, u)
	}
	m.mu.Lock()
	if _, ok := m.volumesOf[uid]; ok { // not torn down meanwhile
		m.usage[uid] = usageCache{at: now, out: out}
	}
	m.mu.Unlock()
	return out
}

// measure reads one volume of the pod; false if it has nothing to report
// (not set up yet, torn down, or of a type without statistics).
func (m *Manager) measure(uid types.UID, v *v1.Volume, claims map[string]claimMount) (VolumeUsage, bool) {
	if c, ok := claims[v.Name]; ok {
		if c.path == "" {
			return VolumeUsage{}, false
		}
		fs, ok := m.statfsBounded(c.path)
		if !ok {
			return VolumeUsage{}, false
		}
		u := withFs(VolumeUsage{UsedBytes: fs.Used, InodesUsed: fs.InodesUsed}, fs)
		u.PVC = &c.claim
		return u, true
	}
	p := m.pluginFor(v)
	if p == nil || p.Name() == "" {
		return VolumeUsage{}, false // nothing in the pod's directory
	}
	dir := m.volumeDirOf(uid, p, v)
	bytes, inodes, err := diskusage.Of(dir)
	if err != nil {
		return VolumeUsage{}, false
	}
	fs, err := m.statfs(dir)
	if err != nil {
		return VolumeUsage{}, false
	}
	local := v.ConfigMap != nil || v.EmptyDir != nil && v.EmptyDir.Medium == v1.StorageMediumDefault
	u := withFs(VolumeUsage{UsedBytes: bytes, InodesUsed: inodes, LocalEphemeral: local}, fs)
	return u, true
}

func withFs(u VolumeUsage, fs diskusage.Fs) VolumeUsage {
	u.CapacityBytes, u.AvailableBytes, u.Inodes, u.InodesFree = fs.Capacity, fs.Available, fs.Inodes, fs.InodesFree
	return u
}

// statfsBounded reads the filesystem at path in a goroutine of its own,
// waiting for it at most Config.UsageTimeout on the Manager's clock; false
// if it failed, did not answer in time, or a statfs of path started
// earlier has not returned yet (so at most one goroutine per path is ever
// blocked).
func (m *Manager) statfsBounded(path string) (diskusage.Fs, bool) {
	m.mu.Lock()
	if m.statfsPending[path] {
		m.mu.Unlock()
		return diskusage.Fs{}, false
	}
	m.statfsPending[path] = true
	m.mu.Unlock()
	type result struct {
		fs  diskusage.Fs
		err error
	}
	done := make(chan result, 1) // never blocks the goroutine
	go func() {
		fs, err := m.statfs(path)
		m.mu.Lock()
		delete(m.statfsPending, path)
		m.mu.Unlock()
		done <- result{fs, err}
	}()
	timer := m.cfg.Clock.NewTimer(m.cfg.UsageTimeout)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.fs, r.err == nil
	case <-timer.C():
		return diskusage.Fs{}, false
	}
}
