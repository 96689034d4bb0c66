package cgroupstat

import (
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeFiles writes files (path relative to root → content) under root.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// v1MemoryStat is a cgroup v1 memory.stat as the kernel writes it.
const v1MemoryStat = `cache 4096
rss 8192
rss_huge 0
shmem 0
mapped_file 1024
dirty 0
writeback 0
pgpgin 10
pgpgout 5
pgfault 100
pgmajfault 1
inactive_anon 0
active_anon 8192
inactive_file 2048
active_file 2048
unevictable 0
hierarchical_memory_limit 268435456
total_cache 40960
total_rss 81920
total_mapped_file 10240
total_pgfault 1000
`

// v2MemoryStat is the head of a cgroup v2 memory.stat.
const v2MemoryStat = `anon 8192
file 4096
kernel 512
kernel_stack 0
pagetables 0
sock 0
shmem 0
file_mapped 1024
file_dirty 0
file_writeback 0
pgfault 100
pgmajfault 1
`

func TestReadV1(t *testing.T) {
	root := t.TempDir()
	const pod = "/kubepods/burstable/poduid-1"
	writeFiles(t, root, map[string]string{
		"memory" + pod + "/memory.stat":            v1MemoryStat,
		"memory" + pod + "/memory.use_hierarchy":   "1\n",
		"memory" + pod + "/memory.limit_in_bytes":  "268435456\n",
		"cpu,cpuacct" + pod + "/cpuacct.stat":      "user 250\nsystem 75\n",
		"cpu,cpuacct" + pod + "/cpu.stat":          "nr_periods 40\nnr_throttled 3\nthrottled_time 1500000000\n",
		"cpu,cpuacct" + pod + "/cpu.shares":        "512\n",
		"cpu,cpuacct" + pod + "/cpu.cfs_period_us": "100000\n",
		"cpu,cpuacct" + pod + "/cpu.cfs_quota_us":  "50000\n",
		"memory/kubepods/memory.stat":              v1MemoryStat,
		"memory/kubepods/memory.use_hierarchy":     "0\n",
		"memory/kubepods/memory.limit_in_bytes":    "9223372036854771712\n",
		"cpu,cpuacct/kubepods/cpu.cfs_quota_us":    "-1\n",
		"cpu,cpuacct/kubepods/cpu.cfs_period_us":   "100000\n",
		"cpu,cpuacct/kubepods/cpu.shares":          "2048\n",
		"cpu,cpuacct/kubepods/cpu.stat":            "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
	})
	require.NoError(t, os.Symlink("cpu,cpuacct", filepath.Join(root, "cpu")))
	require.NoError(t, os.Symlink("cpu,cpuacct", filepath.Join(root, "cpuacct")))
	m := NewMount(root, "")
	require.False(t, m.Unified())
	r := m.Reader()
	require.Equal(t, Stats{
		HasMemory: true, Cache: 40960, MappedFile: 10240,
		HasCPUUsage: true, UserNanos: 2.5e9, SystemNanos: 0.75e9,
		HasThrottling: true, Periods: 40, ThrottledPeriods: 3, ThrottledNanos: 1.5e9,
		HasCPUSpec: true, Quota: 50000, Period: 100000, Shares: 512,
		HasMemoryLimit: true, MemoryLimit: 268435456,
	}, r.Read(pod))
	// Without use_hierarchy the cgroup's own figures; no quota; no cpuacct.stat.
	require.Equal(t, Stats{
		HasMemory: true, Cache: 4096, MappedFile: 1024,
		HasThrottling: true, HasCPUSpec: true, Period: 100000, Shares: 2048,
		HasMemoryLimit: true, MemoryLimit: 9223372036854771712,
	}, r.Read("/kubepods"))
	require.Equal(t, Stats{}, r.Read("/kubepods/besteffort"), "a missing cgroup reads nothing")
}

func TestReadV2(t *testing.T) {
	root := t.TempDir()
	const pod = "/kubepods/burstable/poduid-1"
	writeFiles(t, root, map[string]string{
		"cgroup.controllers":  "cpuset cpu io memory pids\n",
		"cpu.stat":            "usage_usec 9000000\nuser_usec 6000000\nsystem_usec 3000000\n",
		"memory.stat":         v2MemoryStat,
		pod + "/memory.stat":  v2MemoryStat,
		pod + "/memory.max":   "max\n",
		pod + "/cpu.stat":     "usage_usec 3000000\nuser_usec 2500000\nsystem_usec 500000\nnr_periods 40\nnr_throttled 3\nthrottled_usec 1500000\nnr_bursts 0\nburst_usec 0\n",
		pod + "/cpu.max":      "50000 100000\n",
		pod + "/cpu.weight":   "20\n",
		"kubepods/cpu.stat":   "usage_usec 1\nuser_usec 1\nsystem_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
		"kubepods/cpu.max":    "max 100000\n",
		"kubepods/cpu.weight": "10000\n",
		"kubepods/memory.max": "1073741824\n",
	})
	m := NewMount(root, "")
	require.True(t, m.Unified())
	r := m.Reader()
	require.Equal(t, Stats{
		HasMemory: true, Cache: 4096, MappedFile: 1024,
		HasCPUUsage: true, UserNanos: 2.5e9, SystemNanos: 0.5e9,
		HasThrottling: true, Periods: 40, ThrottledPeriods: 3, ThrottledNanos: 1.5e9,
		HasCPUSpec: true, Quota: 50000, Period: 100000, Shares: 2 + 19*262142/9999,
		HasMemoryLimit: true, MemoryLimit: math.MaxUint64,
	}, r.Read(pod))
	// The root: usage only (no cpu.max, memory.max; cpu.stat without nr_periods).
	require.Equal(t, Stats{HasMemory: true, Cache: 4096, MappedFile: 1024,
		HasCPUUsage: true, UserNanos: 6e9, SystemNanos: 3e9}, r.Read("/"))
	require.Equal(t, Stats{HasCPUUsage: true, UserNanos: 1000,
		HasThrottling: true, HasCPUSpec: true, Period: 100000, Shares: 262144,
		HasMemoryLimit: true, MemoryLimit: 1 << 30}, r.Read("/kubepods"))
}

func TestUnreadableFiles(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files without read permission")
	}
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"cgroup.controllers": "cpu memory\n",
		"a/memory.stat":      v2MemoryStat,
		"a/cpu.stat":         "user_usec 1\nsystem_usec 2\n",
	})
	require.NoError(t, os.Chmod(filepath.Join(root, "a/memory.stat"), 0))
	s := NewMount(root, "").Reader().Read("/a")
	require.False(t, s.HasMemory)
	require.True(t, s.HasCPUUsage)
}

func TestPIDAndNetwork(t *testing.T) {
	root, proc := t.TempDir(), t.TempDir()
	const pod = "/kubepods/poduid-1"
	writeFiles(t, root, map[string]string{
		"cgroup.controllers":              "cpu memory\n",
		pod + "/cgroup.procs":             "",
		pod + "/aaa/cgroup.procs":         "",
		pod + "/sandbox/cgroup.procs":     "4242\n4243\n",
		"/kubepods/podempty/cgroup.procs": "",
	})
	writeFiles(t, proc, map[string]string{"4242/net/dev": `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0
  eth0: 5000000    4000    1    7    0     0          0         0  3000000    2500    0    2    0     0       0          0
vethab12:     10       1    0    0    0     0          0         0       10       1    0    0    0     0       0          0
`})
	r := NewMount(root, proc).Reader()
	pid, err := r.PID(pod)
	require.NoError(t, err)
	require.Equal(t, 4242, pid)
	ifaces, err := r.Network(pid)
	require.NoError(t, err)
	require.Equal(t, []Interface{{Name: "eth0", RxPackets: 4000, RxDropped: 7, TxPackets: 2500, TxDropped: 2}}, ifaces)

	_, err = r.PID("/kubepods/podempty")
	require.ErrorIs(t, err, errNoProcess)
	_, err = r.PID("/kubepods/gone")
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = r.Network(1)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestParseNetDevMalformed(t *testing.T) {
	_, err := parseNetDev([]byte("h1\nh2\n  eth0: 1 2 3\n"))
	require.ErrorContains(t, err, "invalid interface stats line")
	_, err = parseNetDev([]byte("h1\nh2\n  eth0: 1 x 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n"))
	require.Error(t, err)
	ifaces, err := parseNetDev([]byte("h1\nh2\n"))
	require.NoError(t, err)
	require.Empty(t, ifaces)
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("total_cache 1\n", 1000) // over the first read's 4 KiB
	require.NoError(t, os.WriteFile(dir+"/big", []byte(big), 0o644))
	require.NoError(t, os.WriteFile(dir+"/empty", nil, 0o644))

	buf := make([]byte, 0, 16)
	data, err := ReadFile(dir+"/big", buf)
	require.NoError(t, err)
	require.Equal(t, big, string(data))
	data, err = ReadFile(dir+"/empty", data)
	require.NoError(t, err)
	require.Empty(t, data)
	_, err = ReadFile(dir+"/missing", nil)
	require.ErrorIs(t, err, fs.ErrNotExist)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, dir+"/missing", pe.Path)
	_, err = ReadFile(dir, nil) // a directory opens but does not read
	require.Error(t, err)
}
