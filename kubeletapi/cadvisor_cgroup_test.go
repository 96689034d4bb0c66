package kubeletapi_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nodekit/nodekit/kubeletapi"
)

// cgroupFamilies are the families read from cgroups and network
// namespaces.
var cgroupFamilies = []string{
	"container_cpu_cfs_periods_total",
	"container_cpu_cfs_throttled_periods_total",
	"container_cpu_cfs_throttled_seconds_total",
	"container_cpu_system_seconds_total",
	"container_cpu_user_seconds_total",
	"container_memory_cache",
	"container_memory_mapped_file",
	"container_network_receive_packets_dropped_total",
	"container_network_receive_packets_total",
	"container_network_transmit_packets_dropped_total",
	"container_network_transmit_packets_total",
	"container_spec_cpu_period",
	"container_spec_cpu_quota",
	"container_spec_cpu_shares",
	"container_spec_memory_limit_bytes",
}

// onlyFamilies keeps the named families of an exposition.
func onlyFamilies(text string, names []string) string {
	var b strings.Builder
	keep := false
	for line := range strings.Lines(text) {
		trimmed := strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(trimmed, "# HELP "); ok {
			name, _, _ := strings.Cut(rest, " ")
			keep = slices.Contains(names, name)
		}
		if keep && trimmed != "" {
			b.WriteString(trimmed + "\n")
		}
	}
	return b.String()
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

const (
	cgPod = "/kubepods/burstable/poduid-1"
	cgC   = cgPod + "/aaa"
	// netDev is the pod's namespace: lo is left out, as cadvisor.
	netDev = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0
  eth0:    1000     400    0    7    0     0          0         0     2000     250    0    2    0     0       0          0
`
)

// v1Tree is a cgroup v1 host (cpu and cpuacct co-mounted) with ns/p's
// cgroup, its container c (aaa) with a CPU limit, its sandbox holding pid
// 4242, and no cgroup for c2; procfs has 4242's net/dev.
func v1Tree(t *testing.T) (root, proc string) {
	root, proc = t.TempDir(), t.TempDir()
	files := map[string]string{}
	for _, cg := range []struct {
		name, quota string
		cache       int
	}{{cgPod, "-1", 8192}, {cgC, "50000", 4096}} {
		files["memory"+cg.name+"/memory.use_hierarchy"] = "1\n"
		files["memory"+cg.name+"/memory.stat"] = "cache 1\nmapped_file 1\ntotal_cache " + itoa(cg.cache) + "\ntotal_mapped_file 1024\n"
		files["memory"+cg.name+"/memory.limit_in_bytes"] = "9223372036854771712\n"
		files["memory"+cg.name+"/cgroup.procs"] = ""
		files["cpu,cpuacct"+cg.name+"/cpuacct.stat"] = "user 250\nsystem 50\n"
		files["cpu,cpuacct"+cg.name+"/cpu.stat"] = "nr_periods 40\nnr_throttled 3\nthrottled_time 1500000000\n"
		files["cpu,cpuacct"+cg.name+"/cpu.shares"] = "102\n"
		files["cpu,cpuacct"+cg.name+"/cpu.cfs_period_us"] = "100000\n"
		files["cpu,cpuacct"+cg.name+"/cpu.cfs_quota_us"] = cg.quota + "\n"
	}
	files["memory"+cgC+"/memory.limit_in_bytes"] = "134217728\n"
	files["memory"+cgPod+"/sandbox/cgroup.procs"] = "4242\n"
	writeTree(t, root, files)
	require.NoError(t, os.Symlink("cpu,cpuacct", filepath.Join(root, "cpu")))
	require.NoError(t, os.Symlink("cpu,cpuacct", filepath.Join(root, "cpuacct")))
	writeTree(t, proc, map[string]string{"4242/net/dev": netDev})
	return root, proc
}

// v2Tree is the same pod on the unified hierarchy.
func v2Tree(t *testing.T) (root, proc string) {
	root, proc = t.TempDir(), t.TempDir()
	files := map[string]string{"cgroup.controllers": "cpu memory pids\n",
		"cpu.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"}
	for _, cg := range []struct {
		name, max string
		cache     int
	}{{cgPod, "max 100000", 8192}, {cgC, "50000 100000", 4096}} {
		files[cg.name+"/memory.stat"] = "anon 1\nfile " + itoa(cg.cache) + "\nfile_mapped 1024\n"
		files[cg.name+"/memory.max"] = "max\n"
		files[cg.name+"/cgroup.procs"] = ""
		files[cg.name+"/cpu.stat"] = "usage_usec 3000000\nuser_usec 2500000\nsystem_usec 500000\nnr_periods 40\nnr_throttled 3\nthrottled_usec 1500000\n"
		files[cg.name+"/cpu.max"] = cg.max + "\n"
		files[cg.name+"/cpu.weight"] = "4\n" // 2 + 3×262142/9999 = 80
	}
	files[cgC+"/memory.max"] = "134217728\n"
	files[cgPod+"/sandbox/cgroup.procs"] = "4242\n"
	writeTree(t, root, files)
	writeTree(t, proc, map[string]string{"4242/net/dev": netDev})
	return root, proc
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestCadvisorCgroupMetrics: with CgroupRoot, the families cadvisor reads
// from cgroups, for ns/p's cgroup and its container c, on v1 and v2: the
// CFS families only where there is a quota (c), limits without a sample
// time and "no limit" as 0; the pod's namespace's packets on the pod's
// series. c2, the root and the system containers have no cgroup in the
// tree and no such series.
func TestCadvisorCgroupMetrics(t *testing.T) {
	const (
		pod = `container="",id="/kubepods/burstable/poduid-1",image="",name="",namespace="ns",pod="p"`
		c   = `container="c",id="/kubepods/burstable/poduid-1/aaa",image="docker.io/library/nginx:latest",name="aaa",namespace="ns",pod="p"`
		ts  = " 1624396300000"
	)
	eth0 := func(base string) string {
		i := strings.Index(base, ",name=")
		return base[:i] + `,interface="eth0"` + base[i:]
	}
	// On v1 cpu.shares 102 is the figure; on v2 the weight 4 converted.
	want := func(shares string) string {
		return `
		# HELP container_cpu_cfs_periods_total Number of elapsed enforcement period intervals.
		# TYPE container_cpu_cfs_periods_total counter
		container_cpu_cfs_periods_total{` + c + `} 40` + ts + `
		# HELP container_cpu_cfs_throttled_periods_total Number of throttled period intervals.
		# TYPE container_cpu_cfs_throttled_periods_total counter
		container_cpu_cfs_throttled_periods_total{` + c + `} 3` + ts + `
		# HELP container_cpu_cfs_throttled_seconds_total Total time duration the container has been throttled.
		# TYPE container_cpu_cfs_throttled_seconds_total counter
		container_cpu_cfs_throttled_seconds_total{` + c + `} 1.5` + ts + `
		# HELP container_cpu_system_seconds_total Cumulative system cpu time consumed in seconds.
		# TYPE container_cpu_system_seconds_total counter
		container_cpu_system_seconds_total{` + pod + `} 0.5` + ts + `
		container_cpu_system_seconds_total{` + c + `} 0.5` + ts + `
		# HELP container_cpu_user_seconds_total Cumulative user cpu time consumed in seconds.
		# TYPE container_cpu_user_seconds_total counter
		container_cpu_user_seconds_total{` + pod + `} 2.5` + ts + `
		container_cpu_user_seconds_total{` + c + `} 2.5` + ts + `
		# HELP container_memory_cache Number of bytes of page cache memory.
		# TYPE container_memory_cache gauge
		container_memory_cache{` + pod + `} 8192` + ts + `
		container_memory_cache{` + c + `} 4096` + ts + `
		# HELP container_memory_mapped_file Size of memory mapped files in bytes.
		# TYPE container_memory_mapped_file gauge
		container_memory_mapped_file{` + pod + `} 1024` + ts + `
		container_memory_mapped_file{` + c + `} 1024` + ts + `
		# HELP container_network_receive_packets_dropped_total Cumulative count of packets dropped while receiving
		# TYPE container_network_receive_packets_dropped_total counter
		container_network_receive_packets_dropped_total{` + eth0(pod) + `} 7` + ts + `
		# HELP container_network_receive_packets_total Cumulative count of packets received
		# TYPE container_network_receive_packets_total counter
		container_network_receive_packets_total{` + eth0(pod) + `} 400` + ts + `
		# HELP container_network_transmit_packets_dropped_total Cumulative count of packets dropped while transmitting
		# TYPE container_network_transmit_packets_dropped_total counter
		container_network_transmit_packets_dropped_total{` + eth0(pod) + `} 2` + ts + `
		# HELP container_network_transmit_packets_total Cumulative count of packets transmitted
		# TYPE container_network_transmit_packets_total counter
		container_network_transmit_packets_total{` + eth0(pod) + `} 250` + ts + `
		# HELP container_spec_cpu_period CPU period of the container.
		# TYPE container_spec_cpu_period gauge
		container_spec_cpu_period{` + pod + `} 100000
		container_spec_cpu_period{` + c + `} 100000
		# HELP container_spec_cpu_quota CPU quota of the container.
		# TYPE container_spec_cpu_quota gauge
		container_spec_cpu_quota{` + c + `} 50000
		# HELP container_spec_cpu_shares CPU share of the container.
		# TYPE container_spec_cpu_shares gauge
		container_spec_cpu_shares{` + pod + `} ` + shares + `
		container_spec_cpu_shares{` + c + `} ` + shares + `
		# HELP container_spec_memory_limit_bytes Memory limit for the container.
		# TYPE container_spec_memory_limit_bytes gauge
		container_spec_memory_limit_bytes{` + pod + `} 0
		container_spec_memory_limit_bytes{` + c + `} 1.34217728e+08
	`
	}
	for _, tc := range []struct {
		name   string
		tree   func(*testing.T) (string, string)
		shares string
	}{{"v1", v1Tree, "102"}, {"v2", v2Tree, "80"}} {
		t.Run(tc.name, func(t *testing.T) {
			root, proc := tc.tree(t)
			body := scrapeCadvisor(t, cadvisorServer(t, cadvisorSummary(), nil, func(cfg *kubeletapi.Config) {
				cfg.Cadvisor.CgroupRoot, cfg.Cadvisor.ProcPath = root, proc
			}))
			require.Equal(t, sortedSeries(want(tc.shares)), sortedSeries(onlyFamilies(body, cgroupFamilies)))
			// The summary's families are unchanged, but for the pressure
			// families on a host without PSI (no cpu.pressure at the root:
			// the v1 tree), which cadvisor leaves out.
			plain := scrapeCadvisor(t, cadvisorServer(t, cadvisorSummary(), nil, nil))
			fams := cadvisorFamilies
			if tc.name == "v1" {
				fams = slices.DeleteFunc(slices.Clone(fams), func(f string) bool { return strings.HasPrefix(f, "container_pressure_") })
				require.Contains(t, plain, "container_pressure_cpu_waiting_seconds_total", "the summary has PSI")
				require.NotContains(t, body, "container_pressure_")
			}
			require.Equal(t, sortedSeries(onlyFamilies(plain, fams)), sortedSeries(onlyFamilies(body, cadvisorFamilies)))
		})
	}
}

// TestCadvisorCgroupMetricsUnreadable: without CgroupRoot nothing is read;
// a cgroup whose files are missing or a namespace whose net/dev is missing
// or malformed leaves its families out and the scrape whole.
func TestCadvisorCgroupMetricsUnreadable(t *testing.T) {
	scrape := func(root, proc string) string {
		return scrapeCadvisor(t, cadvisorServer(t, cadvisorSummary(), nil, func(cfg *kubeletapi.Config) {
			cfg.Cadvisor.CgroupRoot, cfg.Cadvisor.ProcPath = root, proc
		}))
	}
	body := scrapeCadvisor(t, cadvisorServer(t, cadvisorSummary(), nil, nil))
	require.Empty(t, onlyFamilies(body, cgroupFamilies), "no CgroupRoot")

	body = scrape(filepath.Join(t.TempDir(), "none"), t.TempDir())
	require.Empty(t, onlyFamilies(body, cgroupFamilies), "no cgroup mount")
	require.Contains(t, body, "container_scrape_error 0\n")

	root, proc := v2Tree(t)
	require.NoError(t, os.Remove(filepath.Join(root, cgC, "memory.stat")))
	require.NoError(t, os.Remove(filepath.Join(root, cgPod, "cpu.stat")))
	require.NoError(t, os.WriteFile(filepath.Join(proc, "4242/net/dev"), []byte("h\nh\neth0: 1 2\n"), 0o644))
	body = scrape(root, proc)
	require.Contains(t, body, `container_memory_cache{container="",id="/kubepods/burstable/poduid-1",`)
	require.NotContains(t, body, `container_memory_cache{container="c",`)
	require.Contains(t, body, `container_cpu_user_seconds_total{container="c",`)
	require.NotContains(t, body, `container_cpu_user_seconds_total{container="",`)
	require.NotContains(t, body, `container_spec_cpu_period{container="",`)
	require.NotContains(t, body, "packets")

	require.NoError(t, os.Remove(filepath.Join(root, cgPod, "sandbox/cgroup.procs")))
	require.NotContains(t, scrape(root, proc), "packets", "no process in the pod")
}
