package stats_test

import (
	"bufio"
	"context"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nodekit/nodekit/stats"
	"github.com/nodekit/nodekit/stats/statstest"
)

var _ stats.PodStatsLister = (*statstest.Runtime)(nil)

func meminfo(t *testing.T, key string) uint64 {
	f, err := os.Open("/proc/meminfo")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 2 && fs[0] == key+":" {
			v, err := strconv.ParseUint(fs[1], 10, 64)
			require.NoError(t, err)
			return v * 1024
		}
	}
	t.Fatalf("%s not in /proc/meminfo", key)
	return 0
}

func within(t *testing.T, want, got uint64, frac float64, what string) {
	t.Helper()
	require.LessOrEqual(t, math.Abs(float64(got)-float64(want)), frac*float64(want), "%s: want %d got %d", what, want, got)
}

// TestMatchesThisMachine reads the real host.
func TestMatchesThisMachine(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no procfs")
	}
	p, err := stats.New(stats.Config{NodeName: "n1", NodeFsPath: "/", AllocatableMemory: 1 << 30})
	require.NoError(t, err)
	s, err := p.Get(context.Background())
	require.NoError(t, err)
	m := s.Node.Memory
	within(t, meminfo(t, "MemTotal"), *m.AvailableBytes+*m.WorkingSetBytes, 0.05, "capacity")
	require.LessOrEqual(t, *m.WorkingSetBytes, *m.UsageBytes, "the working set is usage less inactive file pages")
	require.NotNil(t, s.Node.CPU.UsageCoreNanoSeconds)
	require.NotZero(t, *s.Node.CPU.UsageCoreNanoSeconds)
	require.False(t, s.Node.StartTime.IsZero(), "boot time")
	require.NotNil(t, s.Node.Swap)
	require.Greater(t, *s.Node.Fs.CapacityBytes, uint64(0))
	require.Greater(t, *s.Node.Rlimit.MaxPID, int64(0))
	var pods bool
	for _, c := range s.Node.SystemContainers {
		if c.Name == "pods" {
			pods = true
			require.Equal(t, uint64(1<<30), *c.Memory.AvailableBytes, "no pods")
		}
	}
	require.True(t, pods)

	p, err = stats.New(stats.Config{NodeFsPath: "/does/not/exist"})
	require.NoError(t, err)
	_, err = p.Get(context.Background())
	require.ErrorContains(t, err, "statfs /does/not/exist")
	_, err = p.GetCPUAndMemoryStats(context.Background())
	require.NoError(t, err, "no filesystems read")
}
