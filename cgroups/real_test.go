package cgroups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The Manager on this host's real cgroup filesystem (the kernel's own
// semantics: controllers, subtree control, limits read back), under a
// private root that is removed afterwards. It runs as root where
// /sys/fs/cgroup is a writable cgroup filesystem, and says which hierarchy
// it checked: cgroup v2 where the host mounts it, v1 otherwise.
func TestRealCgroupFilesystem(t *testing.T) {
	const mnt = "/sys/fs/cgroup"
	if os.Geteuid() != 0 {
		t.Skip("needs root to create cgroups")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil {
		t.Skipf("no cgroup filesystem at %s: %v", mnt, err)
	}
	v2 := HostIsV2(mnt)
	if v2 {
		t.Log("cgroup v2 (unified) at", mnt)
	} else {
		t.Log("cgroup v1 at", mnt, "(the cgroup v2 path of this test runs on hosts that mount cgroup2 there)")
	}
	root := fmt.Sprintf("/nodekit-test-%d", os.Getpid())
	m, err := New(Config{Root: root, PodPIDsLimit: 100})
	require.NoError(t, err)
	require.Equal(t, v2, m.V2())
	defer func() {
		for _, r := range m.roots {
			_ = m.removeTree(filepath.Join(r, root))
		}
	}()
	ctx := context.Background()
	if err := m.Setup(ctx); err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, unix.EROFS) {
			t.Skipf("the cgroup filesystem is not writable here: %v", err)
		}
		require.NoError(t, err)
	}
	p := podWith("real-1", guar("a", "250m", "64Mi"))
	require.NoError(t, m.EnsurePod(ctx, p))
	got, err := m.PodConfig(p)
	require.NoError(t, err)
	assert.Equal(t, int64(25000), got.CPUQuota)
	assert.Equal(t, uint64(QuotaPeriod), got.CPUPeriod)
	assert.Equal(t, int64(64<<20), got.Memory)
	if v2 {
		assert.Equal(t, weightFromShares(256), weightFromShares(got.CPUShares))
	} else {
		assert.Equal(t, uint64(256), got.CPUShares)
	}
	require.NoError(t, m.UpdatePod(ctx, p, Resources{Memory: 32 << 20}))
	got, err = m.PodConfig(p)
	require.NoError(t, err)
	assert.Equal(t, int64(32<<20), got.Memory, "the kernel took the resize")
	pods, err := m.Pods()
	require.NoError(t, err)
	require.Contains(t, pods, p.UID)
	require.NoError(t, m.Destroy(ctx, pods[p.UID]))
	assert.False(t, m.PodExists(p))
}
