//go:build linux

package stats

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit/nodekit/internal/diskusage"
)

// fsStats reports the filesystem holding path.
func fsStats(path string, now metav1.Time) (*statsapi.FsStats, error) {
	fs, err := diskusage.Statfs(path)
	if err != nil {
		return nil, fmt.Errorf("stats: statfs %s: %w", path, err)
	}
	return &statsapi.FsStats{
		Time: now, CapacityBytes: &fs.Capacity, AvailableBytes: &fs.Available, UsedBytes: &fs.Used,
		Inodes: &fs.Inodes, InodesFree: &fs.InodesFree, InodesUsed: &fs.InodesUsed,
	}, nil
}
