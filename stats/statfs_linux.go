//go:build linux

package stats

import (
	"fmt"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// fsStats reports the filesystem holding path.
func fsStats(path string, now metav1.Time) (*statsapi.FsStats, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return nil, fmt.Errorf("stats: statfs %s: %w", path, err)
	}
	bs := uint64(st.Bsize)
	capacity, avail, used := st.Blocks*bs, st.Bavail*bs, (st.Blocks-st.Bfree)*bs
	inodes, free := st.Files, st.Ffree
	usedInodes := inodes - free
	return &statsapi.FsStats{
		Time: now, CapacityBytes: &capacity, AvailableBytes: &avail, UsedBytes: &used,
		Inodes: &inodes, InodesFree: &free, InodesUsed: &usedInodes,
	}, nil
}
