package kubeletapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// summary answers /stats/summary; only_cpu_and_memory=true trims it as the
// kubelet does (node and pod CPU and memory, no filesystems or networks).
func (s *Server) summary(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Summary == nil {
		http.Error(w, "stats are not supported by this node", http.StatusNotImplemented)
		return
	}
	serveSummary(w, r, s.cfg.Summary.Get)
}

// nodeSummary answers /stats/nodes/{node}/summary (MultiNode).
func (s *Server) nodeSummary(w http.ResponseWriter, r *http.Request) {
	get, ok := s.nodeSummaryGetter(w, r)
	if ok {
		serveSummary(w, r, get)
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

func serveSummary(w http.ResponseWriter, r *http.Request, get func(context.Context) (*statsapi.Summary, error)) {
	only := false
	if v := r.URL.Query().Get("only_cpu_and_memory"); v != "" {
		var err error
		if only, err = parseBool(v); err != nil {
			http.Error(w, "only_cpu_and_memory: "+err.Error(), http.StatusBadRequest)
			return
		}
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

func cpuAndMemoryOnly(in *statsapi.Summary) *statsapi.Summary {
	out := &statsapi.Summary{Node: statsapi.NodeStats{
		NodeName: in.Node.NodeName, CPU: in.Node.CPU, Memory: in.Node.Memory, StartTime: in.Node.StartTime,
	}}
	for _, p := range in.Pods {
		q := statsapi.PodStats{PodRef: p.PodRef, CPU: p.CPU, Memory: p.Memory, StartTime: p.StartTime}
		for _, c := range p.Containers {
			q.Containers = append(q.Containers, statsapi.ContainerStats{Name: c.Name, StartTime: c.StartTime, CPU: c.CPU, Memory: c.Memory})
		}
		out.Pods = append(out.Pods, q)
	}
	return out
}

// resourceMetrics answers /metrics/resource: the summary in the kubelet's
// resource-metrics format (what metrics-server scrapes), collected in the
// request's context.
func (s *Server) resourceMetrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Summary == nil {
		http.Error(w, "stats are not supported by this node", http.StatusNotImplemented)
		return
	}
	serveResourceMetrics(w, r, s.cfg.Summary.Get)
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
	reg.MustRegister(&resourceCollector{ctx: r.Context(), summary: SummaryProviderFunc(get)})
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
}

// resourceCollector collects one summary per scrape.
type resourceCollector struct {
	ctx     context.Context
	summary SummaryProvider
}

var (
	descNodeCPU        = prometheus.NewDesc("node_cpu_usage_seconds_total", "Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	descNodeMemory     = prometheus.NewDesc("node_memory_working_set_bytes", "Current working set of the node in bytes", nil, nil)
	descNodeSwap       = prometheus.NewDesc("node_swap_usage_bytes", "Current swap usage of the node in bytes. Reported only on non-windows systems", nil, nil)
	descContainerCPU   = prometheus.NewDesc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed by the container in core-seconds", []string{"container", "pod", "namespace"}, nil)
	descContainerMem   = prometheus.NewDesc("container_memory_working_set_bytes", "Current working set of the container in bytes", []string{"container", "pod", "namespace"}, nil)
	descContainerSwap  = prometheus.NewDesc("container_swap_usage_bytes", "Current amount of the container swap usage in bytes. Reported only on non-windows systems", []string{"container", "pod", "namespace"}, nil)
	descContainerStart = prometheus.NewDesc("container_start_time_seconds", "Start time of the container since unix epoch in seconds", []string{"container", "pod", "namespace"}, nil)
	descPodCPU         = prometheus.NewDesc("pod_cpu_usage_seconds_total", "Cumulative cpu time consumed by the pod in core-seconds", []string{"pod", "namespace"}, nil)
	descPodMemory      = prometheus.NewDesc("pod_memory_working_set_bytes", "Current working set of the pod in bytes", []string{"pod", "namespace"}, nil)
	descPodSwap        = prometheus.NewDesc("pod_swap_usage_bytes", "Current amount of the pod swap usage in bytes. Reported only on non-windows systems", []string{"pod", "namespace"}, nil)
	descScrapeError    = prometheus.NewDesc("resource_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

func (c *resourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descNodeCPU, descNodeMemory, descNodeSwap, descContainerCPU, descContainerMem,
		descContainerSwap, descContainerStart, descPodCPU, descPodMemory, descPodSwap, descScrapeError} {
		ch <- d
	}
}

func (c *resourceCollector) Collect(ch chan<- prometheus.Metric) {
	sum, err := c.summary.Get(c.ctx)
	if err != nil {
		klog.FromContext(c.ctx).Error(err, "Error getting summary for resource metrics")
		ch <- prometheus.MustNewConstMetric(descScrapeError, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(descScrapeError, prometheus.GaugeValue, 0)
	collectCPU(ch, descNodeCPU, sum.Node.CPU)
	collectMemory(ch, descNodeMemory, descNodeSwap, sum.Node.Memory, sum.Node.Swap)
	for _, p := range sum.Pods {
		for _, ctr := range p.Containers {
			labels := []string{ctr.Name, p.PodRef.Name, p.PodRef.Namespace}
			if !ctr.StartTime.IsZero() {
				ch <- prometheus.MustNewConstMetric(descContainerStart, prometheus.GaugeValue,
					float64(ctr.StartTime.UnixNano())/1e9, labels...)
			}
			collectCPU(ch, descContainerCPU, ctr.CPU, labels...)
			collectMemory(ch, descContainerMem, descContainerSwap, ctr.Memory, ctr.Swap, labels...)
		}
		collectCPU(ch, descPodCPU, p.CPU, p.PodRef.Name, p.PodRef.Namespace)
		collectMemory(ch, descPodMemory, descPodSwap, p.Memory, p.Swap, p.PodRef.Name, p.PodRef.Namespace)
	}
}

func collectCPU(ch chan<- prometheus.Metric, d *prometheus.Desc, s *statsapi.CPUStats, labels ...string) {
	if s == nil || s.UsageCoreNanoSeconds == nil {
		return
	}
	ch <- prometheus.NewMetricWithTimestamp(s.Time.Time,
		prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(*s.UsageCoreNanoSeconds)/1e9, labels...))
}

func collectMemory(ch chan<- prometheus.Metric, mem, swap *prometheus.Desc, m *statsapi.MemoryStats, sw *statsapi.SwapStats, labels ...string) {
	if m != nil && m.WorkingSetBytes != nil {
		ch <- prometheus.NewMetricWithTimestamp(m.Time.Time,
			prometheus.MustNewConstMetric(mem, prometheus.GaugeValue, float64(*m.WorkingSetBytes), labels...))
	}
	if sw != nil && sw.SwapUsageBytes != nil {
		ch <- prometheus.NewMetricWithTimestamp(sw.Time.Time,
			prometheus.MustNewConstMetric(swap, prometheus.GaugeValue, float64(*sw.SwapUsageBytes), labels...))
	}
}
