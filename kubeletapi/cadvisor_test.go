package kubeletapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/kubeletapi/kubeletapitest"
)

// sampleTime is the summary's sample time: 2021-06-23 05:11:18.302 UTC+8,
// 1624396278302 in exposition milliseconds.
var sampleTime = metav1.NewTime(time.Unix(0, 1624396278302091597))

// scrapeTime is the server clock's time: container_last_seen.
var scrapeTime = time.Unix(1624396300, 0)

// cadvisorPod is ns/p (testPod), Burstable, with its containers' runtime
// IDs and images in its status.
func cadvisorPod() *v1.Pod {
	pod := testPod()
	pod.Spec.Containers[0].Image = "nginx"
	pod.Spec.Containers[1].Image = "busybox"
	pod.Status.QOSClass = v1.PodQOSBurstable
	pod.Status.ContainerStatuses = []v1.ContainerStatus{
		{Name: "c", ContainerID: "containerd://aaa", Image: "docker.io/library/nginx:latest"},
		{Name: "c2", ContainerID: "containerd://bbb", Image: "docker.io/library/busybox:latest"},
	}
	return pod
}

// cadvisorSummary has the node (with the kubelet and pods system
// containers and one the config does not name), and ns/p with its two
// containers and the pod's network.
func cadvisorSummary() *statsapi.Summary {
	u := func(v uint64) *uint64 { return &v }
	return &statsapi.Summary{
		Node: statsapi.NodeStats{
			NodeName:  nodeName,
			StartTime: metav1.NewTime(time.Unix(1624390000, 0)),
			CPU: &statsapi.CPUStats{Time: sampleTime, UsageNanoCores: u(1e8), UsageCoreNanoSeconds: u(10e9),
				PSI: &statsapi.PSIStats{Full: statsapi.PSIData{Total: 2e6}, Some: statsapi.PSIData{Total: 3e6}}},
			Memory: &statsapi.MemoryStats{Time: sampleTime, AvailableBytes: u(7000), UsageBytes: u(2000),
				WorkingSetBytes: u(1000), RSSBytes: u(800), PageFaults: u(100), MajorPageFaults: u(1)},
			Swap: &statsapi.SwapStats{Time: sampleTime, SwapUsageBytes: u(500), SwapAvailableBytes: u(1500)},
			Network: &statsapi.NetworkStats{Time: sampleTime,
				InterfaceStats: statsapi.InterfaceStats{Name: "eth0", RxBytes: u(100), RxErrors: u(1), TxBytes: u(200), TxErrors: u(2)},
				Interfaces: []statsapi.InterfaceStats{
					{Name: "eth0", RxBytes: u(100), RxErrors: u(1), TxBytes: u(200), TxErrors: u(2)},
					{Name: "eth1", RxBytes: u(10), RxErrors: u(0), TxBytes: u(20), TxErrors: u(0)},
				}},
			Fs: &statsapi.FsStats{Time: sampleTime, AvailableBytes: u(6000), CapacityBytes: u(10000), UsedBytes: u(4000),
				InodesFree: u(900), Inodes: u(1000), InodesUsed: u(100)},
			SystemContainers: []statsapi.ContainerStats{
				{Name: "kubelet", StartTime: metav1.NewTime(time.Unix(1624390100, 0)),
					CPU:    &statsapi.CPUStats{Time: sampleTime, UsageCoreNanoSeconds: u(1e9)},
					Memory: &statsapi.MemoryStats{Time: sampleTime, UsageBytes: u(400), WorkingSetBytes: u(300)}},
				{Name: "runtime", StartTime: metav1.NewTime(time.Unix(1624390100, 0)),
					CPU: &statsapi.CPUStats{Time: sampleTime, UsageCoreNanoSeconds: u(2e9)}},
				{Name: "pods", StartTime: metav1.NewTime(time.Unix(1624390050, 0)),
					CPU:    &statsapi.CPUStats{Time: sampleTime, UsageCoreNanoSeconds: u(5e9)},
					Memory: &statsapi.MemoryStats{Time: sampleTime, AvailableBytes: u(5000), WorkingSetBytes: u(600)}},
			},
		},
		Pods: []statsapi.PodStats{{
			PodRef:    statsapi.PodReference{Name: podName, Namespace: podNS, UID: podUID},
			StartTime: metav1.NewTime(time.Unix(1624396000, 0)),
			CPU:       &statsapi.CPUStats{Time: sampleTime, UsageCoreNanoSeconds: u(3e9)},
			Memory:    &statsapi.MemoryStats{Time: sampleTime, UsageBytes: u(350), WorkingSetBytes: u(300), RSSBytes: u(250)},
			Swap:      &statsapi.SwapStats{Time: sampleTime, SwapUsageBytes: u(0)},
			Network: &statsapi.NetworkStats{Time: sampleTime,
				InterfaceStats: statsapi.InterfaceStats{Name: "eth0", RxBytes: u(1000), RxErrors: u(0), TxBytes: u(2000), TxErrors: u(0)}},
			ProcessStats: &statsapi.ProcessStats{ProcessCount: u(3)},
			Containers: []statsapi.ContainerStats{
				{Name: "c", StartTime: metav1.NewTime(time.Unix(1624396010, 0)),
					CPU: &statsapi.CPUStats{Time: sampleTime, UsageCoreNanoSeconds: u(2e9)},
					Memory: &statsapi.MemoryStats{Time: sampleTime, UsageBytes: u(200), WorkingSetBytes: u(180),
						RSSBytes: u(150), PageFaults: u(40), MajorPageFaults: u(0),
						PSI: &statsapi.PSIStats{Full: statsapi.PSIData{Total: 1500}, Some: statsapi.PSIData{Total: 2500}}},
					IO: &statsapi.IOStats{Time: sampleTime,
						PSI: &statsapi.PSIStats{Full: statsapi.PSIData{Total: 4e6}, Some: statsapi.PSIData{Total: 5e6}}},
					Swap: &statsapi.SwapStats{Time: sampleTime, SwapUsageBytes: u(0)},
					Rootfs: &statsapi.FsStats{Time: sampleTime, CapacityBytes: u(10000), UsedBytes: u(64),
						InodesFree: u(900), Inodes: u(1000), InodesUsed: u(4)},
					Logs: &statsapi.FsStats{Time: sampleTime, UsedBytes: u(12)}},
				{Name: "c2", StartTime: metav1.NewTime(time.Unix(1624396020, 0)),
					CPU:    &statsapi.CPUStats{Time: sampleTime, UsageCoreNanoSeconds: u(1e9)},
					Memory: &statsapi.MemoryStats{Time: sampleTime, UsageBytes: u(150), WorkingSetBytes: u(120)}},
			},
		}},
	}
}

// cadvisorServer serves sum (or err) with ns/p in its pods, on a clock at
// scrapeTime, changed by mutate (may be nil).
func cadvisorServer(t *testing.T, sum *statsapi.Summary, err error, mutate func(*kubeletapi.Config)) http.Handler {
	t.Helper()
	srv, f := newServer(t, func(cfg *kubeletapi.Config) {
		cfg.Clock = clocktesting.NewFakeClock(scrapeTime)
		cfg.Cadvisor.SystemCgroups = map[string]string{"kubelet": "/system.slice/kubelet.service", "pods": "/kubepods"}
		if mutate != nil {
			mutate(cfg)
		}
	})
	f.pods.Set(cadvisorPod())
	f.summary.Set(sum)
	f.summary.SetError(err)
	return srv.Handler()
}

func scrapeCadvisor(t testing.TB, h http.Handler) string {
	t.Helper()
	w := get(h, "/metrics/cadvisor")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	return w.Body.String()
}

// TestCadvisorMetricsExposition compares the whole exposition of a node,
// two system containers and a pod with two containers with what the
// kubelet's cadvisor collector writes for the same figures: its names,
// help, types, labels (container, id, image, name, namespace, pod) and
// sample timestamps; the pod's network on the pod's series; PSI totals
// (microseconds) in seconds; health state -1 (no health check).
func TestCadvisorMetricsExposition(t *testing.T) {
	body := scrapeCadvisor(t, cadvisorServer(t, cadvisorSummary(), nil, nil))
	const (
		root    = `container="",id="/",image="",name="",namespace="",pod=""`
		kubelet = `container="",id="/system.slice/kubelet.service",image="",name="",namespace="",pod=""`
		pods    = `container="",id="/kubepods",image="",name="",namespace="",pod=""`
		pod     = `container="",id="/kubepods/burstable/poduid-1",image="",name="",namespace="ns",pod="p"`
		c       = `container="c",id="/kubepods/burstable/poduid-1/aaa",image="docker.io/library/nginx:latest",name="aaa",namespace="ns",pod="p"`
		c2      = `container="c2",id="/kubepods/burstable/poduid-1/bbb",image="docker.io/library/busybox:latest",name="bbb",namespace="ns",pod="p"`
	)
	// Label pairs are written in name order: cpu, device, failure_type,
	// interface and scope sort among the base labels.
	withCPU := func(base string) string {
		i := strings.Index(base, ",id=")
		return base[:i] + `,cpu="total"` + base[i:]
	}
	withDevice := func(base string) string {
		i := strings.Index(base, ",id=")
		return base[:i] + `,device=""` + base[i:]
	}
	withFailure := func(base, kind, scope string) string {
		i := strings.Index(base, ",id=")
		return base[:i] + `,failure_type="` + kind + `"` + base[i:] + `,scope="` + scope + `"`
	}
	withInterface := func(base, iface string) string {
		i := strings.Index(base, ",name=")
		return base[:i] + `,interface="` + iface + `"` + base[i:]
	}
	const ts = " 1624396278302"
	want := `
		# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed in seconds.
		# TYPE container_cpu_usage_seconds_total counter
		container_cpu_usage_seconds_total{` + withCPU(root) + `} 10` + ts + `
		container_cpu_usage_seconds_total{` + withCPU(pods) + `} 5` + ts + `
		container_cpu_usage_seconds_total{` + withCPU(pod) + `} 3` + ts + `
		container_cpu_usage_seconds_total{` + withCPU(kubelet) + `} 1` + ts + `
		container_cpu_usage_seconds_total{` + withCPU(c) + `} 2` + ts + `
		container_cpu_usage_seconds_total{` + withCPU(c2) + `} 1` + ts + `
		# HELP container_fs_inodes_free Number of available Inodes
		# TYPE container_fs_inodes_free gauge
		container_fs_inodes_free{` + withDevice(root) + `} 900` + ts + `
		container_fs_inodes_free{` + withDevice(c) + `} 900` + ts + `
		# HELP container_fs_inodes_total Number of Inodes
		# TYPE container_fs_inodes_total gauge
		container_fs_inodes_total{` + withDevice(root) + `} 1000` + ts + `
		container_fs_inodes_total{` + withDevice(c) + `} 1000` + ts + `
		# HELP container_fs_limit_bytes Number of bytes that can be consumed by the container on this filesystem.
		# TYPE container_fs_limit_bytes gauge
		container_fs_limit_bytes{` + withDevice(root) + `} 10000` + ts + `
		container_fs_limit_bytes{` + withDevice(c) + `} 10000` + ts + `
		# HELP container_fs_usage_bytes Number of bytes that are consumed by the container on this filesystem.
		# TYPE container_fs_usage_bytes gauge
		container_fs_usage_bytes{` + withDevice(root) + `} 4000` + ts + `
		container_fs_usage_bytes{` + withDevice(c) + `} 64` + ts + `
		# HELP container_health_state The result of the container's health check
		# TYPE container_health_state gauge
		container_health_state{` + root + `} -1` + ts + `
		container_health_state{` + pods + `} -1` + ts + `
		container_health_state{` + pod + `} -1` + ts + `
		container_health_state{` + kubelet + `} -1` + ts + `
		container_health_state{` + c + `} -1` + ts + `
		container_health_state{` + c2 + `} -1` + ts + `
		# HELP container_last_seen Last time a container was seen by the exporter
		# TYPE container_last_seen gauge
		container_last_seen{` + root + `} 1.6243963e+09 1624396300000
		container_last_seen{` + pods + `} 1.6243963e+09 1624396300000
		container_last_seen{` + pod + `} 1.6243963e+09 1624396300000
		container_last_seen{` + kubelet + `} 1.6243963e+09 1624396300000
		container_last_seen{` + c + `} 1.6243963e+09 1624396300000
		container_last_seen{` + c2 + `} 1.6243963e+09 1624396300000
		# HELP container_memory_failures_total Cumulative count of memory allocation failures.
		# TYPE container_memory_failures_total counter
		container_memory_failures_total{` + withFailure(root, "pgfault", "container") + `} 100` + ts + `
		container_memory_failures_total{` + withFailure(root, "pgfault", "hierarchy") + `} 100` + ts + `
		container_memory_failures_total{` + withFailure(root, "pgmajfault", "container") + `} 1` + ts + `
		container_memory_failures_total{` + withFailure(root, "pgmajfault", "hierarchy") + `} 1` + ts + `
		container_memory_failures_total{` + withFailure(c, "pgfault", "container") + `} 40` + ts + `
		container_memory_failures_total{` + withFailure(c, "pgfault", "hierarchy") + `} 40` + ts + `
		container_memory_failures_total{` + withFailure(c, "pgmajfault", "container") + `} 0` + ts + `
		container_memory_failures_total{` + withFailure(c, "pgmajfault", "hierarchy") + `} 0` + ts + `
		# HELP container_memory_rss Size of RSS in bytes.
		# TYPE container_memory_rss gauge
		container_memory_rss{` + root + `} 800` + ts + `
		container_memory_rss{` + pod + `} 250` + ts + `
		container_memory_rss{` + c + `} 150` + ts + `
		# HELP container_memory_swap Container swap usage in bytes.
		# TYPE container_memory_swap gauge
		container_memory_swap{` + root + `} 500` + ts + `
		container_memory_swap{` + pod + `} 0` + ts + `
		container_memory_swap{` + c + `} 0` + ts + `
		# HELP container_memory_usage_bytes Current memory usage in bytes, including all memory regardless of when it was accessed
		# TYPE container_memory_usage_bytes gauge
		container_memory_usage_bytes{` + root + `} 2000` + ts + `
		container_memory_usage_bytes{` + pod + `} 350` + ts + `
		container_memory_usage_bytes{` + kubelet + `} 400` + ts + `
		container_memory_usage_bytes{` + c + `} 200` + ts + `
		container_memory_usage_bytes{` + c2 + `} 150` + ts + `
		# HELP container_memory_working_set_bytes Current working set in bytes.
		# TYPE container_memory_working_set_bytes gauge
		container_memory_working_set_bytes{` + root + `} 1000` + ts + `
		container_memory_working_set_bytes{` + pods + `} 600` + ts + `
		container_memory_working_set_bytes{` + pod + `} 300` + ts + `
		container_memory_working_set_bytes{` + kubelet + `} 300` + ts + `
		container_memory_working_set_bytes{` + c + `} 180` + ts + `
		container_memory_working_set_bytes{` + c2 + `} 120` + ts + `
		# HELP container_network_receive_bytes_total Cumulative count of bytes received
		# TYPE container_network_receive_bytes_total counter
		container_network_receive_bytes_total{` + withInterface(root, "eth0") + `} 100` + ts + `
		container_network_receive_bytes_total{` + withInterface(root, "eth1") + `} 10` + ts + `
		container_network_receive_bytes_total{` + withInterface(pod, "eth0") + `} 1000` + ts + `
		# HELP container_network_receive_errors_total Cumulative count of errors encountered while receiving
		# TYPE container_network_receive_errors_total counter
		container_network_receive_errors_total{` + withInterface(root, "eth0") + `} 1` + ts + `
		container_network_receive_errors_total{` + withInterface(root, "eth1") + `} 0` + ts + `
		container_network_receive_errors_total{` + withInterface(pod, "eth0") + `} 0` + ts + `
		# HELP container_network_transmit_bytes_total Cumulative count of bytes transmitted
		# TYPE container_network_transmit_bytes_total counter
		container_network_transmit_bytes_total{` + withInterface(root, "eth0") + `} 200` + ts + `
		container_network_transmit_bytes_total{` + withInterface(root, "eth1") + `} 20` + ts + `
		container_network_transmit_bytes_total{` + withInterface(pod, "eth0") + `} 2000` + ts + `
		# HELP container_network_transmit_errors_total Cumulative count of errors encountered while transmitting
		# TYPE container_network_transmit_errors_total counter
		container_network_transmit_errors_total{` + withInterface(root, "eth0") + `} 2` + ts + `
		container_network_transmit_errors_total{` + withInterface(root, "eth1") + `} 0` + ts + `
		container_network_transmit_errors_total{` + withInterface(pod, "eth0") + `} 0` + ts + `
		# HELP container_pressure_cpu_stalled_seconds_total Total time duration no tasks in the container could make progress due to CPU congestion.
		# TYPE container_pressure_cpu_stalled_seconds_total counter
		container_pressure_cpu_stalled_seconds_total{` + root + `} 2` + ts + `
		# HELP container_pressure_cpu_waiting_seconds_total Total time duration tasks in the container have waited due to CPU congestion.
		# TYPE container_pressure_cpu_waiting_seconds_total counter
		container_pressure_cpu_waiting_seconds_total{` + root + `} 3` + ts + `
		# HELP container_pressure_io_stalled_seconds_total Total time duration no tasks in the container could make progress due to IO congestion.
		# TYPE container_pressure_io_stalled_seconds_total counter
		container_pressure_io_stalled_seconds_total{` + c + `} 4` + ts + `
		# HELP container_pressure_io_waiting_seconds_total Total time duration tasks in the container have waited due to IO congestion.
		# TYPE container_pressure_io_waiting_seconds_total counter
		container_pressure_io_waiting_seconds_total{` + c + `} 5` + ts + `
		# HELP container_pressure_memory_stalled_seconds_total Total time duration no tasks in the container could make progress due to memory congestion.
		# TYPE container_pressure_memory_stalled_seconds_total counter
		container_pressure_memory_stalled_seconds_total{` + c + `} 0.0015` + ts + `
		# HELP container_pressure_memory_waiting_seconds_total Total time duration tasks in the container have waited due to memory congestion.
		# TYPE container_pressure_memory_waiting_seconds_total counter
		container_pressure_memory_waiting_seconds_total{` + c + `} 0.0025` + ts + `
		# HELP container_scrape_error 1 if there was an error while getting container metrics, 0 otherwise
		# TYPE container_scrape_error gauge
		container_scrape_error 0
		# HELP container_start_time_seconds Start time of the container since unix epoch in seconds.
		# TYPE container_start_time_seconds gauge
		container_start_time_seconds{` + root + `} 1.62439e+09
		container_start_time_seconds{` + pods + `} 1.62439005e+09
		container_start_time_seconds{` + pod + `} 1.624396e+09
		container_start_time_seconds{` + kubelet + `} 1.6243901e+09
		container_start_time_seconds{` + c + `} 1.62439601e+09
		container_start_time_seconds{` + c2 + `} 1.62439602e+09
	`
	require.Equal(t, sortedSeries(want), sortedSeries(body))
}

// sortedSeries is canonicalExposition with the series of each family in
// order too: the kubelet's registry sorts them, this package writes them
// entry by entry (the root, system containers, each pod then its
// containers); the format gives the order no meaning.
func sortedSeries(text string) string {
	var out, series []string
	flush := func() {
		slices.Sort(series)
		out = append(out, series...)
		series = series[:0]
	}
	for line := range strings.Lines(canonicalExposition(text)) {
		if strings.HasPrefix(line, "#") {
			flush()
			out = append(out, line)
		} else {
			series = append(series, line)
		}
	}
	flush()
	return strings.Join(out, "")
}

// cadvisorFamilies are the families served for a full summary, with
// Machine set.
var cadvisorFamilies = []string{
	"container_cpu_usage_seconds_total",
	"container_fs_inodes_free",
	"container_fs_inodes_total",
	"container_fs_limit_bytes",
	"container_fs_usage_bytes",
	"container_health_state",
	"container_last_seen",
	"container_memory_failures_total",
	"container_memory_rss",
	"container_memory_swap",
	"container_memory_usage_bytes",
	"container_memory_working_set_bytes",
	"container_network_receive_bytes_total",
	"container_network_receive_errors_total",
	"container_network_transmit_bytes_total",
	"container_network_transmit_errors_total",
	"container_pressure_cpu_stalled_seconds_total",
	"container_pressure_cpu_waiting_seconds_total",
	"container_pressure_io_stalled_seconds_total",
	"container_pressure_io_waiting_seconds_total",
	"container_pressure_memory_stalled_seconds_total",
	"container_pressure_memory_waiting_seconds_total",
	"container_scrape_error",
	"container_start_time_seconds",
	"machine_cpu_books",
	"machine_cpu_cores",
	"machine_cpu_drawers",
	"machine_cpu_physical_cores",
	"machine_cpu_sockets",
	"machine_dimm_capacity_bytes",
	"machine_dimm_count",
	"machine_memory_bytes",
	"machine_nvm_avg_power_budget_watts",
	"machine_nvm_capacity",
	"machine_scrape_error",
	"machine_swap_bytes",
}

// parseFamilies returns the type of each family of an exposition, from
// its TYPE lines.
func parseFamilies(t testing.TB, body string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for line := range strings.Lines(body) {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, found := strings.Cut(strings.TrimSpace(rest), " ")
			require.True(t, found, line)
			out[name] = typ
		}
	}
	return out
}

func testMachine() (*cadvisorapi.MachineInfo, error) {
	return &cadvisorapi.MachineInfo{
		Timestamp: scrapeTime.Add(-time.Hour), NumCores: 8, NumPhysicalCores: 4, NumSockets: 1,
		MemoryCapacity: 16 << 30, SwapCapacity: 1 << 30, MachineID: "m-1", SystemUUID: "uuid-1", BootID: "boot-1",
		MemoryByType: map[string]*cadvisorapi.MemoryInfo{"Unbuffered-DDR4": {Capacity: 16 << 30, DimmCount: 2}},
	}, nil
}

// TestCadvisorMetricsFamilies: the families served, against the list the
// package doc gives; every one parses.
func TestCadvisorMetricsFamilies(t *testing.T) {
	body := scrapeCadvisor(t, cadvisorServer(t, cadvisorSummary(), nil, func(cfg *kubeletapi.Config) {
		cfg.Cadvisor.Machine = testMachine
	}))
	families := parseFamilies(t, body)
	names := make([]string, 0, len(families))
	for name := range families {
		names = append(names, name)
	}
	slices.Sort(names)
	require.Equal(t, cadvisorFamilies, names)
	for name, typ := range families {
		want := "gauge"
		if strings.HasSuffix(name, "_total") && !strings.HasPrefix(name, "container_fs_inodes") {
			want = "counter"
		}
		require.Equal(t, want, typ, name)
	}
}

// TestCadvisorMachineMetrics: cadvisor's machine families with the
// machine's IDs, without the time it was read; a failed read is machine_scrape_error 1
// and leaves the container series alone.
func TestCadvisorMachineMetrics(t *testing.T) {
	body := scrapeCadvisor(t, cadvisorServer(t, cadvisorSummary(), nil, func(cfg *kubeletapi.Config) {
		cfg.Cadvisor.Machine = testMachine
	}))
	const ids = `boot_id="boot-1",machine_id="m-1",system_uuid="uuid-1"`
	for _, line := range []string{
		"# HELP machine_cpu_cores Number of logical CPU cores.\n# TYPE machine_cpu_cores gauge\n" +
			"machine_cpu_cores{" + ids + "} 8\n",
		"# HELP machine_memory_bytes Amount of memory installed on the machine.\n# TYPE machine_memory_bytes gauge\n" +
			"machine_memory_bytes{" + ids + "} 1.7179869184e+10\n",
		"machine_cpu_physical_cores{" + ids + "} 4\n",
		"machine_swap_bytes{" + ids + "} 1.073741824e+09\n",
		`machine_dimm_count{` + ids + `,type="Unbuffered-DDR4"} 2` + "\n",
		`machine_nvm_capacity{boot_id="boot-1",machine_id="m-1",mode="app_direct_mode",system_uuid="uuid-1"} 0` + "\n",
		"# HELP machine_scrape_error 1 if there was an error while getting machine metrics, 0 otherwise.\n" +
			"# TYPE machine_scrape_error gauge\nmachine_scrape_error 0\n",
	} {
		require.Contains(t, body, line)
	}

	body = scrapeCadvisor(t, cadvisorServer(t, cadvisorSummary(), nil, func(cfg *kubeletapi.Config) {
		cfg.Cadvisor.Machine = func() (*cadvisorapi.MachineInfo, error) { return nil, errors.New("no sysfs") }
	}))
	require.Contains(t, body, "machine_scrape_error 1\n")
	require.NotContains(t, body, "machine_cpu_cores")
	require.Contains(t, body, "container_scrape_error 0\n")

	body = scrapeCadvisor(t, cadvisorServer(t, cadvisorSummary(), nil, nil))
	require.NotContains(t, body, "machine_", "no Machine, no machine families")
}

// TestCadvisorMetricsScrapeError: a summary that cannot be read is
// container_scrape_error 1 and no container series, as cadvisor.
func TestCadvisorMetricsScrapeError(t *testing.T) {
	body := scrapeCadvisor(t, cadvisorServer(t, nil, errors.New("runtime down"), nil))
	require.Equal(t, sortedSeries(`
		# HELP container_scrape_error 1 if there was an error while getting container metrics, 0 otherwise
		# TYPE container_scrape_error gauge
		container_scrape_error 1
	`), sortedSeries(body))
}

// TestCadvisorMetricsCgroupNames: the cgroupfs names of each QoS class by
// default, the host's names when given, and no id (nor name) for a pod
// the lister does not know, or knows under another UID.
func TestCadvisorMetricsCgroupNames(t *testing.T) {
	for _, tc := range []struct {
		name      string
		qos       v1.PodQOSClass
		uid       types.UID
		mutate    func(*kubeletapi.Config)
		pod, ctr1 string
	}{
		{name: "guaranteed", qos: v1.PodQOSGuaranteed,
			pod: `id="/kubepods/poduid-1"`, ctr1: `id="/kubepods/poduid-1/aaa",image="docker.io/library/nginx:latest",name="aaa"`},
		{name: "besteffort", qos: v1.PodQOSBestEffort,
			pod: `id="/kubepods/besteffort/poduid-1"`, ctr1: `id="/kubepods/besteffort/poduid-1/aaa"`},
		{name: "no QoS class", qos: "", pod: `id=""`, ctr1: `id="",image="docker.io/library/nginx:latest",name="aaa"`},
		{name: "another pod of that name", qos: v1.PodQOSBurstable, uid: "uid-2",
			pod: `id="",image="",name="",namespace="ns"`, ctr1: `id="",image="",name="",namespace="ns"`},
		{name: "systemd", qos: v1.PodQOSBurstable, mutate: func(cfg *kubeletapi.Config) {
			cfg.Cadvisor.PodCgroup = func(pod *v1.Pod) string {
				return "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + strings.ReplaceAll(string(pod.UID), "-", "_") + ".slice"
			}
			cfg.Cadvisor.ContainerCgroup = func(pod, id string) string { return pod + "/cri-containerd-" + id + ".scope" }
		},
			pod:  `id="/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poduid_1.slice"`,
			ctr1: `id="/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poduid_1.slice/cri-containerd-aaa.scope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, f := newServer(t, func(cfg *kubeletapi.Config) {
				cfg.Clock = clocktesting.NewFakeClock(scrapeTime)
				if tc.mutate != nil {
					tc.mutate(cfg)
				}
			})
			pod := cadvisorPod()
			pod.Status.QOSClass = tc.qos
			if tc.uid != "" {
				pod.UID = tc.uid
			}
			f.pods.Set(pod)
			f.summary.Set(cadvisorSummary())
			body := scrapeCadvisor(t, srv.Handler())
			require.Contains(t, body, `container_memory_working_set_bytes{container="",`+tc.pod)
			require.Contains(t, body, `container_memory_working_set_bytes{container="c",`+tc.ctr1)
			// By default only "pods" of the system containers is served.
			require.Contains(t, body, `container_memory_working_set_bytes{container="",id="/kubepods",`)
			require.NotContains(t, body, `kubelet.service`)
		})
	}
}

// TestCadvisorMetricsPodWithoutStatus: a container without a status yet
// has its spec's image and no id.
func TestCadvisorMetricsPodWithoutStatus(t *testing.T) {
	srv, f := newServer(t, func(cfg *kubeletapi.Config) { cfg.Clock = clocktesting.NewFakeClock(scrapeTime) })
	pod := cadvisorPod()
	pod.Status.ContainerStatuses = nil
	f.pods.Set(pod)
	f.summary.Set(cadvisorSummary())
	body := scrapeCadvisor(t, srv.Handler())
	require.Contains(t, body, `container_memory_working_set_bytes{container="c2",id="",image="busybox",name="",namespace="ns",pod="p"} 120 `)
}

// TestCadvisorMetricsEndpoints: authorized as nodes/metrics, 501 without a
// SummaryProvider.
func TestCadvisorMetricsEndpoints(t *testing.T) {
	authz := &recordingAuthorizer{allow: map[string]bool{"metrics": true}}
	srv, f := newServer(t, func(cfg *kubeletapi.Config) {
		cfg.Authenticator, cfg.Authorizer = headerAuthenticator{}, authz
	})
	f.summary.Set(cadvisorSummary())
	w := do(srv.Handler(), http.MethodGet, "/metrics/cadvisor", "Authorization", "Bearer prometheus")
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, "metrics", authz.recorded()[0].GetSubresource())
	require.Contains(t, w.Body.String(), "container_cpu_usage_seconds_total{")

	srv, _ = newServer(t, func(cfg *kubeletapi.Config) { cfg.Summary = nil })
	w = get(srv.Handler(), "/metrics/cadvisor")
	require.Equal(t, http.StatusNotImplemented, w.Code)
	require.Equal(t, "stats are not supported by this node\n", w.Body.String())
}

// benchCadvisorSummary is a full summary of pods × containers, each pod
// Burstable with its containers' IDs in the lister.
func benchCadvisorSummary(pods, containers int) (*statsapi.Summary, []*v1.Pod) {
	sum := cadvisorSummary()
	podTmpl, ctrTmpl := sum.Pods[0], sum.Pods[0].Containers[0]
	sum.Pods = nil
	var list []*v1.Pod
	for i := range pods {
		ps := podTmpl
		ps.PodRef = statsapi.PodReference{Namespace: "default", Name: fmt.Sprintf("pod-%03d", i), UID: fmt.Sprintf("uid-%03d", i)}
		ps.Containers = nil
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: ps.PodRef.Name, UID: types.UID(ps.PodRef.UID)},
			Status: v1.PodStatus{QOSClass: v1.PodQOSBurstable}}
		for j := range containers {
			cs := ctrTmpl
			cs.Name = fmt.Sprintf("c%d", j)
			ps.Containers = append(ps.Containers, cs)
			pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: cs.Name, Image: "nginx"})
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, v1.ContainerStatus{Name: cs.Name,
				ContainerID: fmt.Sprintf("containerd://%064d", i*containers+j), Image: "docker.io/library/nginx:latest"})
		}
		sum.Pods = append(sum.Pods, ps)
		list = append(list, pod)
	}
	return sum, list
}

// BenchmarkCadvisorMetrics scrapes /metrics/cadvisor of 110 pods × 2
// containers: from a ready summary with every figure (the exposition
// alone), and from a stats.Provider over this host and a fake runtime.
func BenchmarkCadvisorMetrics(b *testing.B) {
	sum, pods := benchCadvisorSummary(110, 2)
	run := func(b *testing.B, p kubeletapi.SummaryProvider, lister kubeletapi.PodLister, minLen int, cadvisor ...func(*kubeletapi.CadvisorConfig)) {
		cfg, _ := baseConfig()
		cfg.Summary, cfg.Pods = p, lister
		cfg.Cadvisor.Machine = testMachine
		for _, f := range cadvisor {
			f(&cfg.Cadvisor)
		}
		srv, err := kubeletapi.New(cfg)
		require.NoError(b, err)
		h := srv.Handler()
		b.ReportAllocs()
		for b.Loop() {
			if w := get(h, "/metrics/cadvisor"); w.Code != http.StatusOK || w.Body.Len() < minLen {
				b.Fatal(w.Code, w.Body.Len())
			}
		}
	}
	b.Run("summary/110pods_x2", func(b *testing.B) {
		run(b, kubeletapi.SummaryProviderFunc(func(context.Context) (*statsapi.Summary, error) { return sum, nil }),
			kubeletapitest.NewPodLister(pods...), 1_000_000)
	})
	b.Run("summary+cgroupv1/110pods_x2", func(b *testing.B) {
		root, proc := benchCgroupTree(b, pods)
		run(b, kubeletapi.SummaryProviderFunc(func(context.Context) (*statsapi.Summary, error) { return sum, nil }),
			kubeletapitest.NewPodLister(pods...), 1_000_000, func(c *kubeletapi.CadvisorConfig) { c.CgroupRoot, c.ProcPath = root, proc })
	})
	b.Run("stats.Provider/110pods_x2", func(b *testing.B) {
		if _, err := os.Stat("/proc/meminfo"); err != nil {
			b.Skip("no procfs")
		}
		run(b, benchProvider(b, 110, 2), kubeletapitest.NewPodLister(), 100_000)
	})
}

func TestRuntimeContainerCgroup(t *testing.T) {
	for _, tc := range []struct{ runtime, driver, want string }{
		{"containerd", "cgroupfs", ""},
		{"containerd", "systemd", "/p.slice/cri-containerd-abc.scope"},
		{"cri-o", "systemd", "/p.slice/crio-abc.scope"},
		{"cri-o", "cgroupfs", "/p.slice/crio-abc"},
		{"simulator", "systemd", ""},
	} {
		f := kubeletapi.RuntimeContainerCgroup(tc.runtime, tc.driver)
		if tc.want == "" {
			require.Nil(t, f, tc.runtime+"/"+tc.driver)
			continue
		}
		require.Equal(t, tc.want, f("/p.slice", "abc"), tc.runtime+"/"+tc.driver)
	}
}

// benchCgroupTree is a cgroup v1 tree and procfs for pods (Burstable, as
// benchCadvisorSummary's): each pod's cgroup, its containers' with a CPU
// limit, and a sandbox whose process has a net/dev.
func benchCgroupTree(b *testing.B, pods []*v1.Pod) (root, proc string) {
	root, proc = b.TempDir(), b.TempDir()
	write := func(dir, name, content string) {
		require.NoError(b, os.MkdirAll(dir, 0o755))
		require.NoError(b, os.WriteFile(dir+"/"+name, []byte(content), 0o644))
	}
	stat := strings.Repeat("cache 1\nrss 1\nmapped_file 1\npgfault 1\n", 8) + "total_cache 4096\ntotal_mapped_file 1024\n"
	for i, pod := range pods {
		podCg := "/kubepods/burstable/pod" + string(pod.UID)
		cgs := []string{podCg}
		for _, st := range pod.Status.ContainerStatuses {
			cgs = append(cgs, podCg+"/"+strings.TrimPrefix(st.ContainerID, "containerd://"))
		}
		for _, cg := range cgs {
			write(root+"/memory"+cg, "memory.stat", stat)
			write(root+"/memory"+cg, "memory.use_hierarchy", "1\n")
			write(root+"/memory"+cg, "memory.limit_in_bytes", "134217728\n")
			write(root+"/memory"+cg, "cgroup.procs", "")
			write(root+"/cpuacct"+cg, "cpuacct.stat", "user 250\nsystem 50\n")
			write(root+"/cpu"+cg, "cpu.stat", "nr_periods 40\nnr_throttled 3\nthrottled_time 1500000000\n")
			write(root+"/cpu"+cg, "cpu.shares", "102\n")
			write(root+"/cpu"+cg, "cpu.cfs_period_us", "100000\n")
			write(root+"/cpu"+cg, "cpu.cfs_quota_us", "50000\n")
		}
		pid := strconv.Itoa(1000 + i)
		write(root+"/memory"+podCg+"/sandbox", "cgroup.procs", pid+"\n")
		write(proc+"/"+pid+"/net", "dev", "h1\nh2\n    lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n  eth0: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n")
	}
	return root, proc
}
