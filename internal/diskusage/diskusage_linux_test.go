package diskusage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOf(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), make([]byte, 64<<10), 0o600))
	require.NoError(t, os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "b")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	bytes, inodes, err := Of(dir)
	require.NoError(t, err)
	require.Equal(t, uint64(3), inodes, "the directory, a (b is the same file), sub")
	require.GreaterOrEqual(t, bytes, uint64(64<<10))
	require.Less(t, bytes, uint64(128<<10), "a hard link counted once")
	_, _, err = Of(filepath.Join(dir, "missing"))
	require.Error(t, err)
}
