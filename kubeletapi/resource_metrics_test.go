package kubeletapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/stats"
	"github.com/nodekit/nodekit/stats/statstest"
)

// canonicalExposition trims indentation and blank lines and orders the
// families by name, so expected text can be written as upstream's tests
// write it.
func canonicalExposition(text string) string {
	var families [][]string
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "# HELP ") || len(families) == 0 {
			families = append(families, nil)
		}
		families[len(families)-1] = append(families[len(families)-1], line)
	}
	sort.SliceStable(families, func(i, j int) bool { return families[i][0] < families[j][0] })
	var b strings.Builder
	for _, f := range families {
		for _, l := range f {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// summaryServer is a server whose stats come from p.
func summaryServer(t testing.TB, p kubeletapi.SummaryProvider) http.Handler {
	cfg, _ := baseConfig()
	cfg.Summary = p
	srv, err := kubeletapi.New(cfg)
	require.NoError(t, err)
	return srv.Handler()
}

func scrapeResource(t testing.TB, p kubeletapi.SummaryProvider) string {
	w := get(summaryServer(t, p), "/metrics/resource")
	require.Equal(t, http.StatusOK, w.Code)
	return w.Body.String()
}

// TestResourceMetricsExposition: the rows of upstream's
// TestCollectResourceMetrics (pkg/kubelet/metrics/collectors), compared as
// exposition text. Upstream's test binary reports scrape_error too because
// it runs as version v0.0.0; a v1.36 kubelet hides that metric (ALPHA,
// deprecated in 1.29), so the rows here leave it out.
func TestResourceMetricsExposition(t *testing.T) {
	// a static timestamp: 2021-06-23 05:11:18.302091597 +0800
	staticTimestamp := time.Unix(0, 1624396278302091597)
	testTime := metav1.NewTime(staticTimestamp)
	swapTestTime := metav1.NewTime(staticTimestamp.Add(10 * time.Second))
	const scrapeOK = `
		# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
		# TYPE resource_scrape_error gauge
		resource_scrape_error 0
	`
	for _, tc := range []struct {
		name     string
		summary  *statsapi.Summary
		err      error
		expected string
	}{
		{
			name: "error getting summary",
			err:  errors.New("failed to get summary"),
			expected: `
				# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
				# TYPE resource_scrape_error gauge
				resource_scrape_error 1
			`,
		},
		{
			name: "arbitrary node metrics",
			summary: &statsapi.Summary{Node: statsapi.NodeStats{
				CPU:    &statsapi.CPUStats{Time: testTime, UsageCoreNanoSeconds: ptr.To[uint64](10000000000)},
				Memory: &statsapi.MemoryStats{Time: testTime, WorkingSetBytes: ptr.To[uint64](1000)},
				Swap:   &statsapi.SwapStats{Time: testTime, SwapUsageBytes: ptr.To[uint64](500)},
			}},
			expected: scrapeOK + `
				# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
				# TYPE node_cpu_usage_seconds_total counter
				node_cpu_usage_seconds_total 10 1624396278302
				# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes
				# TYPE node_memory_working_set_bytes gauge
				node_memory_working_set_bytes 1000 1624396278302
				# HELP node_swap_usage_bytes [ALPHA] Current swap usage of the node in bytes. Reported only on non-windows systems
				# TYPE node_swap_usage_bytes gauge
				node_swap_usage_bytes 500 1624396278302
			`,
		},
		{
			name: "node metrics with different timestamps",
			summary: &statsapi.Summary{Node: statsapi.NodeStats{
				CPU:    &statsapi.CPUStats{Time: testTime, UsageCoreNanoSeconds: ptr.To[uint64](10000000000)},
				Memory: &statsapi.MemoryStats{Time: testTime, WorkingSetBytes: ptr.To[uint64](1000)},
				Swap:   &statsapi.SwapStats{Time: swapTestTime, SwapUsageBytes: ptr.To[uint64](500)},
			}},
			expected: scrapeOK + `
				# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
				# TYPE node_cpu_usage_seconds_total counter
				node_cpu_usage_seconds_total 10 1624396278302
				# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes
				# TYPE node_memory_working_set_bytes gauge
				node_memory_working_set_bytes 1000 1624396278302
				# HELP node_swap_usage_bytes [ALPHA] Current swap usage of the node in bytes. Reported only on non-windows systems
				# TYPE node_swap_usage_bytes gauge
				node_swap_usage_bytes 500 1624396288302
			`,
		},
		{
			name: "nil node metrics",
			summary: &statsapi.Summary{Node: statsapi.NodeStats{
				CPU:    &statsapi.CPUStats{Time: testTime},
				Memory: &statsapi.MemoryStats{Time: testTime},
			}},
			expected: scrapeOK,
		},
		{
			name: "arbitrary container metrics for different container, pods and namespaces",
			summary: &statsapi.Summary{Pods: []statsapi.PodStats{
				{
					PodRef: statsapi.PodReference{Name: "pod_a", Namespace: "namespace_a"},
					Containers: []statsapi.ContainerStats{
						{
							Name:      "container_a",
							StartTime: metav1.NewTime(staticTimestamp.Add(-30 * time.Second)),
							CPU:       &statsapi.CPUStats{Time: testTime, UsageCoreNanoSeconds: ptr.To[uint64](10000000000)},
							Memory:    &statsapi.MemoryStats{Time: testTime, WorkingSetBytes: ptr.To[uint64](1000)},
							Swap: &statsapi.SwapStats{Time: testTime, SwapUsageBytes: ptr.To[uint64](1000),
								SwapAvailableBytes: ptr.To[uint64](9000)},
						},
						{
							Name:      "container_b",
							StartTime: metav1.NewTime(staticTimestamp.Add(-2 * time.Minute)),
							CPU:       &statsapi.CPUStats{Time: testTime, UsageCoreNanoSeconds: ptr.To[uint64](10000000000)},
							Memory:    &statsapi.MemoryStats{Time: testTime, WorkingSetBytes: ptr.To[uint64](1000)},
						},
					},
				},
				{
					PodRef: statsapi.PodReference{Name: "pod_b", Namespace: "namespace_b"},
					Containers: []statsapi.ContainerStats{{
						Name:      "container_a",
						StartTime: metav1.NewTime(staticTimestamp.Add(-10 * time.Minute)),
						CPU:       &statsapi.CPUStats{Time: testTime, UsageCoreNanoSeconds: ptr.To[uint64](10000000000)},
						Memory:    &statsapi.MemoryStats{Time: testTime, WorkingSetBytes: ptr.To[uint64](1000)},
					}},
				},
			}},
			expected: scrapeOK + `
				# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
				# TYPE container_cpu_usage_seconds_total counter
				container_cpu_usage_seconds_total{container="container_a",namespace="namespace_a",pod="pod_a"} 10 1624396278302
				container_cpu_usage_seconds_total{container="container_a",namespace="namespace_b",pod="pod_b"} 10 1624396278302
				container_cpu_usage_seconds_total{container="container_b",namespace="namespace_a",pod="pod_a"} 10 1624396278302
				# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes
				# TYPE container_memory_working_set_bytes gauge
				container_memory_working_set_bytes{container="container_a",namespace="namespace_a",pod="pod_a"} 1000 1624396278302
				container_memory_working_set_bytes{container="container_a",namespace="namespace_b",pod="pod_b"} 1000 1624396278302
				container_memory_working_set_bytes{container="container_b",namespace="namespace_a",pod="pod_a"} 1000 1624396278302
				# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds
				# TYPE container_start_time_seconds gauge
				container_start_time_seconds{container="container_a",namespace="namespace_a",pod="pod_a"} 1.6243962483020916e+09
				container_start_time_seconds{container="container_a",namespace="namespace_b",pod="pod_b"} 1.6243956783020916e+09
				container_start_time_seconds{container="container_b",namespace="namespace_a",pod="pod_a"} 1.6243961583020916e+09
				# HELP container_swap_limit_bytes [ALPHA] Current amount of the container swap limit in bytes. Reported only on non-windows systems
				# TYPE container_swap_limit_bytes gauge
				container_swap_limit_bytes{container="container_a",namespace="namespace_a",pod="pod_a"} 10000 1624396278302
				# HELP container_swap_usage_bytes [ALPHA] Current amount of the container swap usage in bytes. Reported only on non-windows systems
				# TYPE container_swap_usage_bytes gauge
				container_swap_usage_bytes{container="container_a",namespace="namespace_a",pod="pod_a"} 1000 1624396278302
			`,
		},
		{
			name: "arbitrary container metrics for negative StartTime",
			summary: &statsapi.Summary{Pods: []statsapi.PodStats{{
				PodRef: statsapi.PodReference{Name: "pod_a", Namespace: "namespace_a"},
				Containers: []statsapi.ContainerStats{{
					Name:      "container_a",
					StartTime: metav1.NewTime(time.Unix(0, -1624396278302091597)),
					CPU:       &statsapi.CPUStats{Time: testTime, UsageCoreNanoSeconds: ptr.To[uint64](10000000000)},
					Memory:    &statsapi.MemoryStats{Time: testTime, WorkingSetBytes: ptr.To[uint64](1000)},
				}},
			}}},
			expected: scrapeOK + `
				# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
				# TYPE container_cpu_usage_seconds_total counter
				container_cpu_usage_seconds_total{container="container_a",namespace="namespace_a",pod="pod_a"} 10 1624396278302
				# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes
				# TYPE container_memory_working_set_bytes gauge
				container_memory_working_set_bytes{container="container_a",namespace="namespace_a",pod="pod_a"} 1000 1624396278302
			`,
		},
		{
			name: "nil container metrics",
			summary: &statsapi.Summary{Pods: []statsapi.PodStats{
				{
					PodRef: statsapi.PodReference{Name: "pod_a", Namespace: "namespace_a"},
					Containers: []statsapi.ContainerStats{{
						Name:      "container_a",
						StartTime: metav1.NewTime(staticTimestamp.Add(-30 * time.Second)),
						CPU:       &statsapi.CPUStats{Time: testTime},
						Memory:    &statsapi.MemoryStats{Time: testTime},
					}},
				},
				{
					PodRef: statsapi.PodReference{Name: "pod_b", Namespace: "namespace_b"},
					Containers: []statsapi.ContainerStats{{
						Name:      "container_a",
						StartTime: metav1.NewTime(staticTimestamp.Add(-10 * time.Minute)),
						CPU:       &statsapi.CPUStats{Time: testTime, UsageCoreNanoSeconds: ptr.To[uint64](10000000000)},
						Memory:    &statsapi.MemoryStats{Time: testTime, WorkingSetBytes: ptr.To[uint64](1000)},
					}},
				},
			}},
			expected: scrapeOK + `
				# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
				# TYPE container_cpu_usage_seconds_total counter
				container_cpu_usage_seconds_total{container="container_a",namespace="namespace_b",pod="pod_b"} 10 1624396278302
				# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes
				# TYPE container_memory_working_set_bytes gauge
				container_memory_working_set_bytes{container="container_a",namespace="namespace_b",pod="pod_b"} 1000 1624396278302
				# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds
				# TYPE container_start_time_seconds gauge
				container_start_time_seconds{container="container_a",namespace="namespace_a",pod="pod_a"} 1.6243962483020916e+09
				container_start_time_seconds{container="container_a",namespace="namespace_b",pod="pod_b"} 1.6243956783020916e+09
			`,
		},
		{
			name: "arbitrary pod metrics",
			summary: &statsapi.Summary{Pods: []statsapi.PodStats{{
				PodRef: statsapi.PodReference{Name: "pod_a", Namespace: "namespace_a"},
				CPU:    &statsapi.CPUStats{Time: testTime, UsageCoreNanoSeconds: ptr.To[uint64](10000000000)},
				Memory: &statsapi.MemoryStats{Time: testTime, WorkingSetBytes: ptr.To[uint64](1000)},
				Swap:   &statsapi.SwapStats{Time: testTime, SwapUsageBytes: ptr.To[uint64](5000)},
			}}},
			expected: scrapeOK + `
				# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds
				# TYPE pod_cpu_usage_seconds_total counter
				pod_cpu_usage_seconds_total{namespace="namespace_a",pod="pod_a"} 10 1624396278302
				# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes
				# TYPE pod_memory_working_set_bytes gauge
				pod_memory_working_set_bytes{namespace="namespace_a",pod="pod_a"} 1000 1624396278302
				# HELP pod_swap_usage_bytes [ALPHA] Current amount of the pod swap usage in bytes. Reported only on non-windows systems
				# TYPE pod_swap_usage_bytes gauge
				pod_swap_usage_bytes{namespace="namespace_a",pod="pod_a"} 5000 1624396278302
			`,
		},
		{
			name: "nil pod metrics",
			summary: &statsapi.Summary{Pods: []statsapi.PodStats{{
				PodRef: statsapi.PodReference{Name: "pod_a", Namespace: "namespace_a"},
				CPU:    &statsapi.CPUStats{Time: testTime},
				Memory: &statsapi.MemoryStats{Time: testTime},
			}}},
			expected: scrapeOK,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := kubeletapi.SummaryProviderFunc(func(context.Context) (*statsapi.Summary, error) { return tc.summary, tc.err })
			require.Equal(t, canonicalExposition(tc.expected), canonicalExposition(scrapeResource(t, p)))
		})
	}
}

// cpuAndMemory is a SummaryProvider whose cheaper summary differs from Get's.
type cpuAndMemory struct{ full, lean *statsapi.Summary }

func (c cpuAndMemory) Get(context.Context) (*statsapi.Summary, error) { return c.full, nil }
func (c cpuAndMemory) GetCPUAndMemoryStats(context.Context) (*statsapi.Summary, error) {
	return c.lean, nil
}

// TestResourceMetricsUseCPUAndMemoryStats: like the kubelet,
// /metrics/resource and /stats/summary?only_cpu_and_memory=true read the
// CPU-and-memory summary when the provider has one.
func TestResourceMetricsUseCPUAndMemoryStats(t *testing.T) {
	mem := func(v uint64) *statsapi.MemoryStats { return &statsapi.MemoryStats{WorkingSetBytes: &v} }
	p := cpuAndMemory{
		full: &statsapi.Summary{Node: statsapi.NodeStats{NodeName: "full", Memory: mem(1)}},
		lean: &statsapi.Summary{Node: statsapi.NodeStats{NodeName: "lean", Memory: mem(2),
			SystemContainers: []statsapi.ContainerStats{{Name: "kubelet", Memory: mem(3)}}}},
	}
	require.Contains(t, scrapeResource(t, p), "node_memory_working_set_bytes 2 ")
	h := summaryServer(t, p)
	body := get(h, "/stats/summary?only_cpu_and_memory=true").Body.String()
	require.Contains(t, body, `"nodeName":"lean"`)
	require.Contains(t, body, `"name":"kubelet"`, "system containers are part of it")
	require.Contains(t, get(h, "/stats/summary").Body.String(), `"nodeName":"full"`)
}

// TestResourceMetricsFromStatsProvider serves a stats.Provider reading this
// host and a fake runtime: every pod and container has CPU and memory, as
// metrics-server needs.
func TestResourceMetricsFromStatsProvider(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no procfs")
	}
	p := benchProvider(t, 3, 2)
	body := scrapeResource(t, p)
	for _, want := range []string{"node_cpu_usage_seconds_total ", "node_memory_working_set_bytes ", "node_swap_usage_bytes ",
		`pod_cpu_usage_seconds_total{namespace="default",pod="pod-002"} 0.5 `,
		`pod_memory_working_set_bytes{namespace="default",pod="pod-002"} 2.097152e+07 `,
		`container_cpu_usage_seconds_total{container="c1",namespace="default",pod="pod-000"} 0.25 `,
		`container_memory_working_set_bytes{container="c1",namespace="default",pod="pod-000"} 1.048576e+07 `,
		`container_start_time_seconds{container="c1",namespace="default",pod="pod-000"} `,
		`container_swap_usage_bytes{container="c1",namespace="default",pod="pod-000"} 0 `,
		`container_swap_limit_bytes{container="c1",namespace="default",pod="pod-000"} 0 `,
		"resource_scrape_error 0\n"} {
		require.Contains(t, body, want)
	}
}

// benchProvider is a stats.Provider over this host and a fake runtime with
// pods × containers, each container with a quarter of a CPU-second and 10Mi
// of working set.
func benchProvider(t testing.TB, pods, containers int) *stats.Provider {
	rt := &statstest.Runtime{NoCopy: true}
	now := time.Now()
	rt.Update(func(s *statstest.State) {
		for i := range pods {
			var names []string
			for j := range containers {
				names = append(names, fmt.Sprintf("c%d", j))
			}
			uid := fmt.Sprintf("uid-%03d", i)
			s.AddPod(statstest.Pod{Name: fmt.Sprintf("pod-%03d", i), Namespace: "default", UID: uid,
				CreatedAt: now.Add(-time.Hour).UnixNano(), Containers: names, Embed: true})
			for _, n := range names {
				st := s.ContainerStatsOf(statstest.ContainerID(uid, n))
				st.Cpu = statstest.CPU(now.UnixNano(), uint64(250*time.Millisecond))
				st.Memory = statstest.Memory(now.UnixNano(), 10<<20)
			}
		}
	})
	p, err := stats.New(stats.Config{NodeName: nodeName, NodeFsPath: t.TempDir(), Runtime: rt})
	require.NoError(t, err)
	return p
}

// BenchmarkResourceMetrics scrapes /metrics/resource of 110 pods × 2
// containers: from a ready summary (the exposition alone), and from a
// stats.Provider over this host and a fake runtime (the whole path).
func BenchmarkResourceMetrics(b *testing.B) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		b.Skip("no procfs")
	}
	p := benchProvider(b, 110, 2)
	sum, err := p.GetCPUAndMemoryStats(context.Background())
	require.NoError(b, err)
	for _, bc := range []struct {
		name string
		p    kubeletapi.SummaryProvider
	}{
		{"summary", kubeletapi.SummaryProviderFunc(func(context.Context) (*statsapi.Summary, error) { return sum, nil })},
		{"stats.Provider", p},
	} {
		b.Run(bc.name+"/110pods_x2", func(b *testing.B) {
			h := summaryServer(b, bc.p)
			b.ReportAllocs()
			for b.Loop() {
				if w := get(h, "/metrics/resource"); w.Code != http.StatusOK || w.Body.Len() < 100_000 {
					b.Fatal(w.Code, w.Body.Len())
				}
			}
		})
	}
}
