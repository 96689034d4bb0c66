package cgroups

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckHost(t *testing.T) {
	dir := t.TempDir()
	v1, v2 := filepath.Join(dir, "v1"), filepath.Join(dir, "v2")
	require.NoError(t, os.MkdirAll(filepath.Join(v1, "memory"), 0o755))
	require.NoError(t, os.MkdirAll(v2, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(v2, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644))
	noSwap, swap := filepath.Join(dir, "swaps-none"), filepath.Join(dir, "swaps")
	require.NoError(t, os.WriteFile(noSwap, []byte("Filename\tType\tSize\tUsed\tPriority\n"), 0o644))
	require.NoError(t, os.WriteFile(swap, []byte("Filename\tType\tSize\tUsed\tPriority\n/swapfile file 1048572 0 -2\n"), 0o644))

	require.True(t, HostIsV2(v2))
	require.False(t, HostIsV2(v1))
	require.ErrorIs(t, CheckHost(v1, noSwap, true, true), ErrCgroupV1)
	require.NoError(t, CheckHost(v1, noSwap, true, false), "cgroup v1 allowed")
	require.NoError(t, CheckHost(v2, noSwap, true, true))
	require.ErrorIs(t, CheckHost(v2, swap, true, true), ErrSwapOn)
	require.NoError(t, CheckHost(v2, swap, false, true), "swap allowed")
	require.NoError(t, CheckHost(v2, filepath.Join(dir, "absent"), true, true), "a kernel without swap")
}
