package cadvisorinfo

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// memTotal reads MemTotal from /proc/meminfo in bytes.
func memTotal(t *testing.T) int64 {
	f, err := os.Open("/proc/meminfo")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err)
			return kb * 1024
		}
	}
	t.Fatal("no MemTotal")
	return 0
}

func TestMachineMatchesProc(t *testing.T) {
	get := Machine()
	info, err := get()
	require.NoError(t, err)
	require.Equal(t, runtime.NumCPU(), info.NumCores, "cores as the OS reports them")
	require.Equal(t, memTotal(t), int64(info.MemoryCapacity))
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(string(boot)), info.BootID)
	again, err := get()
	require.NoError(t, err)
	require.Same(t, info, again, "read once, then cached")
}

func TestEphemeralStorage(t *testing.T) {
	rl := EphemeralStorage(t.TempDir())()
	q := rl[v1.ResourceEphemeralStorage]
	require.Positive(t, q.Value())
	require.Nil(t, EphemeralStorage("/does/not/exist")())
}
