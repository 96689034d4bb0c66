package volumes

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHostMounterIsMountPoint(t *testing.T) {
	dir := t.TempDir()
	checker := HostMounter().(MountPointChecker)
	for _, c := range []struct {
		dir  string
		want bool
	}{
		{"/", true},
		{"/proc", true},
		{dir, false},
		{filepath.Join(dir, "missing"), false},
	} {
		got, err := checker.IsMountPoint(c.dir)
		require.NoError(t, err, c.dir)
		require.Equal(t, c.want, got, c.dir)
		inTable, err := mountTableHas(HostMounter(), c.dir)
		require.NoError(t, err)
		require.Equal(t, inTable, got, "%s: the mount table disagrees", c.dir)
	}

	// A tmpfs of our own, where the process may mount.
	target := filepath.Join(dir, "tmpfs")
	require.NoError(t, os.Mkdir(target, 0o755))
	if err := HostMounter().MountTmpfs(target, 1<<20); err != nil {
		t.Logf("no tmpfs of our own (%v); the rest needs CAP_SYS_ADMIN", err)
		return
	}
	t.Cleanup(func() { _ = HostMounter().Unmount(target) })
	got, err := checker.IsMountPoint(target)
	require.NoError(t, err)
	require.True(t, got)
	require.NoError(t, HostMounter().Unmount(target))
	got, err = checker.IsMountPoint(target)
	require.NoError(t, err)
	require.False(t, got)
}

// The mount table is the fallback of a Mounter without the checker.
func TestIsMountPointFromTable(t *testing.T) {
	m := tableMounter{points: []string{"/a", "/a/b"}}
	for dir, want := range map[string]bool{"/a": true, "/a/b": true, "/a/c": false, "/": false} {
		got, err := isMountPoint(m, dir)
		require.NoError(t, err)
		require.Equal(t, want, got, dir)
	}
}

type tableMounter struct {
	dirOnly
	points []string
}

func (m tableMounter) MountPoints() ([]string, error) { return m.points, nil }

// BenchmarkIsMountPoint: statx against a read of the mount table, which a
// node with a hundred pods makes several hundred lines long.
func BenchmarkIsMountPoint(b *testing.B) {
	dir := b.TempDir()
	b.Run("statx", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := isMountPoint(HostMounter(), dir); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("mount-table", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := mountTableHas(HostMounter(), dir); err != nil {
				b.Fatal(err)
			}
		}
	})
}
