package kubeletapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// CPUAndMemoryProvider is implemented by a SummaryProvider that can read the
// CPU-and-memory-only summary more cheaply than Get (stats.Provider does):
// /metrics/resource and /stats/summary?only_cpu_and_memory=true then use
// it, as the kubelet serves them from its GetCPUAndMemoryStats.
type CPUAndMemoryProvider interface {
	GetCPUAndMemoryStats(ctx context.Context) (*statsapi.Summary, error)
}

// cpuAndMemoryGetter is p's cheaper getter if it has one, else Get.
func cpuAndMemoryGetter(p SummaryProvider) func(context.Context) (*statsapi.Summary, error) {
	if cm, ok := p.(CPUAndMemoryProvider); ok {
		return cm.GetCPUAndMemoryStats
	}
	return p.Get
}

// summary answers /stats/summary; only_cpu_and_memory=true trims it as the
// kubelet does (node, system container, pod and container CPU, memory and
// swap; no filesystems or networks).
func (s *Server) summary(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Summary == nil {
		http.Error(w, "stats are not supported by this node", http.StatusNotImplemented)
		return
	}
	serveSummary(w, r, s.cfg.Summary.Get, cpuAndMemoryGetter(s.cfg.Summary))
}

// nodeSummary answers /stats/nodes/{node}/summary (MultiNode).
func (s *Server) nodeSummary(w http.ResponseWriter, r *http.Request) {
	get, ok := s.nodeSummaryGetter(w, r)
	if ok {
		serveSummary(w, r, get, get)
	}
}

// nodeSummaryGetter reads the summary of the request's {node} once and
// returns it as a getter; a node not served is answered 404.
func (s *Server) nodeSummaryGetter(w http.ResponseWriter, r *http.Request) (func(context.Context) (*statsapi.Summary, error), bool) {
	node := r.PathValue("node")
	sum, err := s.cfg.NodeSummary(r.Context(), node)
	if err == nil && sum == nil {
		http.Error(w, fmt.Sprintf("node %q is not served here", node), http.StatusNotFound)
		return nil, false
	}
	return func(context.Context) (*statsapi.Summary, error) { return sum, err }, true
}

// serveSummary answers with get's summary, or cpuAndMemory's trimmed when
// only_cpu_and_memory is true.
func serveSummary(w http.ResponseWriter, r *http.Request, get, cpuAndMemory func(context.Context) (*statsapi.Summary, error)) {
	only := false
	if v := r.URL.Query().Get("only_cpu_and_memory"); v != "" {
		var err error
		if only, err = parseBool(v); err != nil {
			http.Error(w, "only_cpu_and_memory: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	if only {
		get = cpuAndMemory
	}
	sum, err := get(r.Context())
	if err != nil {
		http.Error(w, "Internal Error: failed to get node stats summary: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if only {
		sum = cpuAndMemoryOnly(sum)
	}
	writeJSON(w, sum)
}

// cpuAndMemoryOnly keeps what the kubelet's GetCPUAndMemoryStats reports.
func cpuAndMemoryOnly(in *statsapi.Summary) *statsapi.Summary {
	out := &statsapi.Summary{Node: statsapi.NodeStats{
		NodeName: in.Node.NodeName, CPU: in.Node.CPU, Memory: in.Node.Memory, Swap: in.Node.Swap, StartTime: in.Node.StartTime,
	}}
	for _, c := range in.Node.SystemContainers {
		out.Node.SystemContainers = append(out.Node.SystemContainers, cpuAndMemoryContainer(c))
	}
	for _, p := range in.Pods {
		q := statsapi.PodStats{PodRef: p.PodRef, CPU: p.CPU, Memory: p.Memory, Swap: p.Swap, StartTime: p.StartTime}
		for _, c := range p.Containers {
			q.Containers = append(q.Containers, cpuAndMemoryContainer(c))
		}
		out.Pods = append(out.Pods, q)
	}
	return out
}

func cpuAndMemoryContainer(c statsapi.ContainerStats) statsapi.ContainerStats {
	return statsapi.ContainerStats{Name: c.Name, StartTime: c.StartTime, CPU: c.CPU, Memory: c.Memory, Swap: c.Swap}
}

// resourceMetrics answers /metrics/resource: the summary in the kubelet's
// resource-metrics format (what metrics-server scrapes), collected in the
// request's context.
func (s *Server) resourceMetrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Summary == nil {
		http.Error(w, "stats are not supported by this node", http.StatusNotImplemented)
		return
	}
	serveResourceMetrics(w, r, cpuAndMemoryGetter(s.cfg.Summary))
}

// nodeResourceMetrics answers /metrics/nodes/{node}/metrics/resource
// (MultiNode).
func (s *Server) nodeResourceMetrics(w http.ResponseWriter, r *http.Request) {
	if get, ok := s.nodeSummaryGetter(w, r); ok {
		serveResourceMetrics(w, r, get)
	}
}

func serveResourceMetrics(w http.ResponseWriter, r *http.Request, get func(context.Context) (*statsapi.Summary, error)) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(&resourceCollector{ctx: r.Context(), get: get})
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
}

// resourceCollector is the kubelet's resource metrics collector
// (pkg/kubelet/metrics/collectors/resource_metrics.go): one summary per
// scrape, the families, help text (with the stability level that
// component-base prefixes), labels and sample timestamps of a v1.36
// kubelet. The ALPHA scrape_error, deprecated in 1.29, is hidden in a v1.36
// kubelet and not served; resource_scrape_error is.
type resourceCollector struct {
	ctx context.Context
	get func(context.Context) (*statsapi.Summary, error)
}

func resourceDesc(name, stability, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, "["+stability+"] "+help, labels, nil)
}

var (
	containerLabels = []string{"container", "pod", "namespace"}
	podLabels       = []string{"pod", "namespace"}

	descNodeCPU = resourceDesc("node_cpu_usage_seconds_total", "STABLE",
		"Cumulative cpu time consumed by the node in core-seconds")
	descNodeMemory = resourceDesc("node_memory_working_set_bytes", "STABLE",
		"Current working set of the node in bytes")
	descNodeSwap = resourceDesc("node_swap_usage_bytes", "ALPHA",
		"Current swap usage of the node in bytes. Reported only on non-windows systems")
	descContainerCPU = resourceDesc("container_cpu_usage_seconds_total", "STABLE",
		"Cumulative cpu time consumed by the container in core-seconds", containerLabels...)
	descContainerMemory = resourceDesc("container_memory_working_set_bytes", "STABLE",
		"Current working set of the container in bytes", containerLabels...)
	descContainerSwap = resourceDesc("container_swap_usage_bytes", "ALPHA",
		"Current amount of the container swap usage in bytes. Reported only on non-windows systems", containerLabels...)
	descContainerSwapLimit = resourceDesc("container_swap_limit_bytes", "ALPHA",
		"Current amount of the container swap limit in bytes. Reported only on non-windows systems", containerLabels...)
	descContainerStart = resourceDesc("container_start_time_seconds", "STABLE",
		"Start time of the container since unix epoch in seconds", containerLabels...)
	descPodCPU = resourceDesc("pod_cpu_usage_seconds_total", "STABLE",
		"Cumulative cpu time consumed by the pod in core-seconds", podLabels...)
	descPodMemory = resourceDesc("pod_memory_working_set_bytes", "STABLE",
		"Current working set of the pod in bytes", podLabels...)
	descPodSwap = resourceDesc("pod_swap_usage_bytes", "ALPHA",
		"Current amount of the pod swap usage in bytes. Reported only on non-windows systems", podLabels...)
	descScrapeError = resourceDesc("resource_scrape_error", "STABLE",
		"1 if there was an error while getting container metrics, 0 otherwise")
)

// Describe sends the descriptors of every family.
func (c *resourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descNodeCPU, descNodeMemory, descNodeSwap, descContainerStart,
		descContainerCPU, descContainerMemory, descContainerSwap, descContainerSwapLimit,
		descPodCPU, descPodMemory, descPodSwap, descScrapeError} {
		ch <- d
	}
}

// Collect reads one summary and sends its samples; a failed read sends
// resource_scrape_error 1 and nothing else.
func (c *resourceCollector) Collect(ch chan<- prometheus.Metric) {
	sum, err := c.get(c.ctx)
	if err != nil {
		klog.FromContext(c.ctx).Error(err, "Error getting summary for resourceMetric prometheus endpoint")
		ch <- prometheus.MustNewConstMetric(descScrapeError, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(descScrapeError, prometheus.GaugeValue, 0)
	n := &sum.Node
	collectCPU(ch, descNodeCPU, n.CPU)
	collectMemory(ch, descNodeMemory, n.Memory)
	collectSwapUsage(ch, descNodeSwap, n.Swap)
	for i := range sum.Pods {
		p := &sum.Pods[i]
		for j := range p.Containers {
			ctr := &p.Containers[j]
			labels := []string{ctr.Name, p.PodRef.Name, p.PodRef.Namespace}
			if ctr.StartTime.Unix() > 0 {
				ch <- prometheus.MustNewConstMetric(descContainerStart, prometheus.GaugeValue,
					float64(ctr.StartTime.UnixNano())/float64(time.Second), labels...)
			}
			collectCPU(ch, descContainerCPU, ctr.CPU, labels...)
			collectMemory(ch, descContainerMemory, ctr.Memory, labels...)
			collectContainerSwap(ch, ctr.Swap, labels...)
		}
		labels := []string{p.PodRef.Name, p.PodRef.Namespace}
		collectCPU(ch, descPodCPU, p.CPU, labels...)
		collectMemory(ch, descPodMemory, p.Memory, labels...)
		collectSwapUsage(ch, descPodSwap, p.Swap, labels...)
	}
}

func collectCPU(ch chan<- prometheus.Metric, d *prometheus.Desc, s *statsapi.CPUStats, labels ...string) {
	if s == nil || s.UsageCoreNanoSeconds == nil {
		return
	}
	ch <- prometheus.NewMetricWithTimestamp(s.Time.Time,
		prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(*s.UsageCoreNanoSeconds)/float64(time.Second), labels...))
}

func collectMemory(ch chan<- prometheus.Metric, d *prometheus.Desc, m *statsapi.MemoryStats, labels ...string) {
	if m == nil || m.WorkingSetBytes == nil {
		return
	}
	ch <- prometheus.NewMetricWithTimestamp(m.Time.Time,
		prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(*m.WorkingSetBytes), labels...))
}

func collectSwapUsage(ch chan<- prometheus.Metric, d *prometheus.Desc, s *statsapi.SwapStats, labels ...string) {
	if s == nil || s.SwapUsageBytes == nil {
		return
	}
	ch <- prometheus.NewMetricWithTimestamp(s.Time.Time,
		prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(*s.SwapUsageBytes), labels...))
}

// collectContainerSwap sends the usage and, when the available swap is
// known, the limit (available + usage), as the kubelet.
func collectContainerSwap(ch chan<- prometheus.Metric, s *statsapi.SwapStats, labels ...string) {
	if s == nil {
		return
	}
	var usage float64
	if s.SwapUsageBytes != nil {
		usage = float64(*s.SwapUsageBytes)
		ch <- prometheus.NewMetricWithTimestamp(s.Time.Time,
			prometheus.MustNewConstMetric(descContainerSwap, prometheus.GaugeValue, usage, labels...))
	}
	if s.SwapAvailableBytes != nil {
		ch <- prometheus.NewMetricWithTimestamp(s.Time.Time,
			prometheus.MustNewConstMetric(descContainerSwapLimit, prometheus.GaugeValue, float64(*s.SwapAvailableBytes)+usage, labels...))
	}
}
