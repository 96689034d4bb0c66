package volumes

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/internal/diskusage"
)

// DefaultUsagePeriod is how long a pod's measured volume usage is served
// before its volumes are walked again: the kubelet's volume stats period
// (volumeStatsAggPeriod).
const DefaultUsagePeriod = time.Minute

// VolumeUsage is what one volume of a pod holds on the node.
type VolumeUsage struct {
	Name                  string
	UsedBytes, InodesUsed uint64
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

// Usage measures the volumes the Manager keeps in the pod's directory
// (emptyDir, configMap, secret, downwardAPI, projected; not hostPath or
// persistent volumes) of a pod set up since the Manager started: a walk of
// each volume's directory within its filesystem, files counted by their
// allocated blocks, served from the last walk for Config.UsagePeriod. The
// walk runs in the caller's goroutine. Unknown pods have none.
func (m *Manager) Usage(uid types.UID) []VolumeUsage {
	now := m.cfg.Clock.Now()
	m.mu.Lock()
	vols, known := m.volumesOf[uid]
	cached, fresh := m.usage[uid]
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
		p := m.pluginFor(v)
		if p == nil || p.Name() == "" {
			continue // nothing in the pod's directory
		}
		bytes, inodes, err := diskusage.Of(m.volumeDirOf(uid, p, v))
		if err != nil {
			continue // not set up (yet), or torn down
		}
		local := v.ConfigMap != nil || v.EmptyDir != nil && v.EmptyDir.Medium == v1.StorageMediumDefault
		out = append(out, VolumeUsage{Name: v.Name, UsedBytes: bytes, InodesUsed: inodes, LocalEphemeral: local, Time: now})
	}
	m.mu.Lock()
	if _, ok := m.volumesOf[uid]; ok { // not torn down meanwhile
		m.usage[uid] = usageCache{at: now, out: out}
	}
	m.mu.Unlock()
	return out
}
