package stats

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/stats/statstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	Ki = 1024
	Mi = 1024 * Ki
	Gi = 1024 * Mi

	bootUnix = 1772330000 // 2026-03-01T01:53:20Z
)

// host is a fake procfs and cgroup tree in a temporary directory.
type host struct {
	t          testing.TB
	dir        string
	proc, cg   string
	v2         bool
	clock      *clocktesting.FakeClock
	rt         *statstest.Runtime
	kubeletCg  string
	runtimeCg  string
	podsCg     string
	nodeFsPath string
	// seeds numbers the cgroups written, for their pressure figures.
	seeds map[string]int
}

// newHost writes a host with 8Gi of memory (6Gi available, 2Gi free), 1Gi
// of swap (256Mi used), three interfaces, and cgroups for the root, the
// kubelet (this process's cgroup), containerd and kubepods (limited to
// 4Gi), as cgroup v2 (each with its own pressure files, see wantPSI) or v1
// (with a blkio directory, and no pressure files).
func newHost(t testing.TB, v2 bool) *host {
	dir := t.TempDir()
	h := &host{t: t, dir: dir, proc: filepath.Join(dir, "proc"), cg: filepath.Join(dir, "cgroup"), v2: v2,
		clock: clocktesting.NewFakeClock(epoch), rt: &statstest.Runtime{},
		kubeletCg: "/system.slice/kubelet.service", runtimeCg: "/system.slice/containerd.service", podsCg: "/kubepods",
		nodeFsPath: dir, seeds: map[string]int{}}
	h.write(h.proc, "meminfo", "MemTotal:        8388608 kB\nMemFree:         2097152 kB\nMemAvailable:    6291456 kB\n"+
		"Buffers:          102400 kB\nSwapCached:            0 kB\nSwapTotal:       1048576 kB\nSwapFree:         786432 kB\n")
	h.setProcStat(1000, 100)
	h.write(h.proc, "loadavg", "0.52 0.58 0.59 3/812 12345\n")
	h.write(h.proc, "sys/kernel/pid_max", "4194304\n")
	h.write(h.proc, "sys/kernel/threads-max", "126000\n")
	h.write(h.proc, "1/net/dev", "Inter-|   Receive                                                |  Transmit\n"+
		" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"+
		"    lo: 5348143   14700    0    0    0     0          0         0  5348143   14700    0    0    0     0       0          0\n"+
		"  eth0: 136236822    8471    3    0    0     0          0         0   604504    6306    4    0    0     0       0          0\n"+
		"veth1a2b: 100 1 0 0 0 0 0 0 200 2 0 0 0 0 0 0\n"+
		"  cni0:    2648      38    0    0    0     0          0        38     2064      20    0    0    0     0       0          0\n")
	if v2 {
		h.write(h.proc, "self/cgroup", "0::"+h.kubeletCg+"\n")
		h.write(h.cg, "cgroup.controllers", "cpuset cpu io memory pids\n")
	} else {
		h.write(h.proc, "self/cgroup", "12:memory:"+h.kubeletCg+"\n11:cpu,cpuacct:"+h.kubeletCg+"\n1:name=systemd:"+h.kubeletCg+"\n")
	}
	h.setCgroup("/", 40*time.Second, 4*Gi, 0)
	h.setCgroup(h.kubeletCg, 2*time.Second, 100*Mi, 0)
	h.setCgroup(h.runtimeCg, 3*time.Second, 200*Mi, 0)
	h.setCgroup(h.podsCg, 20*time.Second, Gi, 4*Gi)
	return h
}

// addCgroupDir creates cgroup: on v2 its directory with pressure files
// (wantPSI(h.seed(cgroup), …)); on v1 its cpu,cpuacct, memory and blkio
// directories.
func (h *host) addCgroupDir(cgroup string) {
	h.t.Helper()
	if !h.v2 {
		for _, c := range []string{"cpu,cpuacct", "memory", "blkio"} {
			require.NoError(h.t, os.MkdirAll(filepath.Join(h.cg, c, cgroup), 0o755))
		}
		return
	}
	seed := h.seed(cgroup)
	for i, r := range []string{"cpu", "memory", "io"} {
		h.write(h.cg, cgroup+"/"+r+".pressure", psiText(wantPSI(seed, i)))
	}
}

// seed is the number of cgroup: 1 for the first one written, and so on.
func (h *host) seed(cgroup string) int {
	if _, ok := h.seeds[cgroup]; !ok {
		h.seeds[cgroup] = len(h.seeds) + 1
	}
	return h.seeds[cgroup]
}

// setProcs writes a cgroup's process list (v2, or v1's cpu,cpuacct).
func (h *host) setProcs(cgroup string, pids ...int) {
	var content string
	for _, p := range pids {
		content += itoa(p) + "\n"
	}
	if h.v2 {
		h.write(h.cg, cgroup+"/cgroup.procs", content)
		return
	}
	h.write(h.cg, "cpu,cpuacct"+cgroup+"/cgroup.procs", content)
}

// Resources of wantPSI.
const (
	psiCPU = iota
	psiMemory
	psiIO
)

// wantPSI is the pressure the fixture writes for resource (psiCPU,
// psiMemory, psiIO) of the cgroup numbered seed: a different figure in
// every field, cgroup and resource, all exact in binary and in the file's
// two decimals.
func wantPSI(seed, resource int) *statsapi.PSIStats {
	n := seed*10 + resource
	f := float64(n)
	return &statsapi.PSIStats{
		Some: statsapi.PSIData{Avg10: f + 0.25, Avg60: f + 0.5, Avg300: f + 0.75, Total: uint64(n)*1_000_000 + 1},
		Full: statsapi.PSIData{Avg10: f + 0.75, Avg60: f + 0.5, Avg300: f + 0.25, Total: uint64(n)*1_000_000 + 2},
	}
}

// psiText is a pressure file as the kernel writes it.
func psiText(p *statsapi.PSIStats) string {
	line := func(kind string, d statsapi.PSIData) string {
		return fmt.Sprintf("%s avg10=%.2f avg60=%.2f avg300=%.2f total=%d\n", kind, d.Avg10, d.Avg60, d.Avg300, d.Total)
	}
	return line("some", p.Some) + line("full", p.Full)
}

func (h *host) write(base, rel, content string) {
	h.t.Helper()
	p := filepath.Join(base, rel)
	require.NoError(h.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(h.t, os.WriteFile(p, []byte(content), 0o644))
}

// setProcStat writes /proc/stat with user and system seconds of CPU time.
func (h *host) setProcStat(userSec, systemSec int) {
	h.write(h.proc, "stat", "cpu  "+itoa(userSec*userHZ)+" 0 "+itoa(systemSec*userHZ)+" 999999 10 0 0 0 0 0\n"+
		"cpu0 1 0 1 1 0 0 0 0 0 0\nintr 1\nbtime "+itoa(bootUnix)+"\nprocesses 1\n")
}

// setCgroup writes a cgroup's CPU time and memory usage (with 10% of it
// inactive file pages); limit 0 is unlimited. The root cgroup gets no
// usage file on v2, as the kernel's.
func (h *host) setCgroup(cgroup string, cpu time.Duration, usage, limit uint64) {
	inactive := usage / 10
	h.addCgroupDir(cgroup)
	if h.v2 {
		h.write(h.cg, cgroup+"/cpu.stat", "usage_usec "+utoa(uint64(cpu/time.Microsecond))+"\nuser_usec 1\nsystem_usec 1\n")
		h.write(h.cg, cgroup+"/memory.stat", "anon "+utoa(usage/2)+"\nfile 5\ninactive_file "+utoa(inactive)+"\npgfault 77\npgmajfault 7\n")
		h.write(h.cg, cgroup+"/cgroup.events", "populated 1\nfrozen 0\n")
		if cgroup == "/" {
			return
		}
		h.write(h.cg, cgroup+"/memory.current", utoa(usage)+"\n")
		lim := "max"
		if limit > 0 {
			lim = utoa(limit)
		}
		h.write(h.cg, cgroup+"/memory.max", lim+"\n")
		h.write(h.cg, cgroup+"/memory.swap.current", "4096\n")
		h.write(h.cg, cgroup+"/memory.swap.max", "max\n")
		return
	}
	h.write(h.cg, "cpu,cpuacct"+cgroup+"/cpuacct.usage", utoa(uint64(cpu))+"\n")
	h.write(h.cg, "memory"+cgroup+"/memory.stat", "rss 1\npgfault 77\npgmajfault 7\ntotal_rss "+utoa(usage/2)+
		"\ntotal_inactive_file "+utoa(inactive)+"\ntotal_swap 4096\n")
	h.write(h.cg, "memory"+cgroup+"/memory.usage_in_bytes", utoa(usage)+"\n")
	lim := uint64(9223372036854771712)
	if limit > 0 {
		lim = limit
	}
	h.write(h.cg, "memory"+cgroup+"/memory.limit_in_bytes", utoa(lim)+"\n")
}

// config is a Config reading this host.
func (h *host) config() Config {
	return Config{NodeName: "n1", NodeFsPath: h.nodeFsPath, ProcPath: h.proc, CgroupRoot: h.cg,
		RuntimeCgroup: h.runtimeCg, PodsCgroup: h.podsCg, Runtime: h.rt, Clock: h.clock}
}

func (h *host) provider(mutate ...func(*Config)) *Provider {
	h.t.Helper()
	cfg := h.config()
	for _, m := range mutate {
		m(&cfg)
	}
	p, err := New(cfg)
	require.NoError(h.t, err)
	return p
}

func itoa(v int) string    { return strconv.Itoa(v) }
func utoa(v uint64) string { return strconv.FormatUint(v, 10) }

func u64p(v uint64) *uint64 { return &v }
