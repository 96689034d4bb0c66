package diskusage

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestStatfs(t *testing.T) {
	dir := t.TempDir()
	fs, err := Statfs(dir)
	require.NoError(t, err)
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &st))
	require.NotZero(t, fs.Capacity)
	require.Equal(t, st.Blocks*uint64(st.Bsize), fs.Capacity)
	require.LessOrEqual(t, fs.Used+fs.Available, fs.Capacity, "reserved blocks are neither")
	require.Equal(t, fs.Inodes-fs.InodesFree, fs.InodesUsed)
	_, err = Statfs(dir + "/missing")
	require.Error(t, err)
}
