package pleg

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// metrics are the generator's optional Prometheus collectors, named as the
// kubelet's where one exists (help with its stability level, as
// component-base writes it). A nil *metrics records nothing.
type metrics struct {
	relistDuration    prometheus.Histogram
	relistInterval    prometheus.Histogram
	podRelistDuration prometheus.Histogram
	lastSeen          prometheus.Gauge
	discarded         prometheus.Counter
	events            *prometheus.CounterVec
	connSuccess       prometheus.Counter
	connError         prometheus.Counter
	connLatency       prometheus.Histogram
}

// newMetrics registers the collectors on reg, and the running pods and
// containers of cache; nil for a nil reg. A collector already registered
// there is an error.
func newMetrics(reg prometheus.Registerer, cache *Cache) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		relistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubelet_pleg_relist_duration_seconds", Help: "[ALPHA] Duration in seconds for relisting pods in PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
		relistInterval: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubelet_pleg_relist_interval_seconds", Help: "[ALPHA] Interval in seconds between relisting in PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
		podRelistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubelet_pleg_pod_relist_duration_seconds", Help: "[ALPHA] Duration in seconds for relisting a single pod in PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
		lastSeen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubelet_pleg_last_seen_seconds", Help: "[ALPHA] Timestamp in seconds when PLEG was last seen active.",
		}),
		discarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubelet_pleg_discard_events",
			Help: "[ALPHA] The number of discard events in PLEG.", // here: events folded into a PodSync, none lost
		}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodekit_pleg_events_total", Help: "Pod lifecycle events delivered, by type.",
		}, []string{"type"}),
		connSuccess: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubelet_evented_pleg_connection_success_count",
			Help: "[ALPHA] The number of times a streaming client was obtained to receive CRI Events.",
		}),
		connError: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubelet_evented_pleg_connection_error_count",
			Help: "[ALPHA] The number of errors encountered during the establishment of streaming connection with the CRI runtime.",
		}),
		connLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubelet_evented_pleg_connection_latency_seconds",
			Help:    "[ALPHA] The latency of streaming connection with the CRI runtime, measured in seconds.",
			Buckets: prometheus.DefBuckets,
		}),
	}
	for _, c := range []prometheus.Collector{m.relistDuration, m.relistInterval, m.podRelistDuration, m.lastSeen,
		m.discarded, m.events, m.connSuccess, m.connError, m.connLatency, runningCollector{cache}} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("pleg: register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) relisted(start, prev time.Time, took time.Duration) {
	if m == nil {
		return
	}
	m.relistDuration.Observe(took.Seconds())
	if !prev.IsZero() {
		m.relistInterval.Observe(start.Sub(prev).Seconds())
	}
}

func (m *metrics) podRelisted(took time.Duration) {
	if m == nil {
		return
	}
	m.podRelistDuration.Observe(took.Seconds())
}

func (m *metrics) seen(t time.Time) {
	if m == nil {
		return
	}
	m.lastSeen.Set(float64(t.Unix()))
}

func (m *metrics) discard() {
	if m == nil {
		return
	}
	m.discarded.Inc()
}

func (m *metrics) delivered(t EventType) {
	if m == nil {
		return
	}
	m.events.WithLabelValues(string(t)).Inc()
}

func (m *metrics) connected() {
	if m == nil {
		return
	}
	m.connSuccess.Inc()
}

func (m *metrics) connFailed() {
	if m == nil {
		return
	}
	m.connError.Inc()
}

func (m *metrics) eventLatency(d time.Duration) {
	if m == nil {
		return
	}
	m.connLatency.Observe(d.Seconds())
}

// The running pods and containers, read from the cache at each scrape.
var (
	runningPodsDesc = prometheus.NewDesc("kubelet_running_pods",
		"[ALPHA] Number of pods that have a running pod sandbox", nil, nil)
	runningContainersDesc = prometheus.NewDesc("kubelet_running_containers",
		"[ALPHA] Number of containers currently running", []string{"container_state"}, nil)
)

// containerStates are the container_state values, upstream's names of the
// CRI container states.
var containerStates = [...]struct {
	state runtimeapi.ContainerState
	name  string
}{
	{runtimeapi.ContainerState_CONTAINER_CREATED, "created"},
	{runtimeapi.ContainerState_CONTAINER_RUNNING, "running"},
	{runtimeapi.ContainerState_CONTAINER_EXITED, "exited"},
	{runtimeapi.ContainerState_CONTAINER_UNKNOWN, "unknown"},
}

// runningCollector reports kubelet_running_pods (pods with a ready
// sandbox) and kubelet_running_containers (containers by state) from the
// cache as it is when scraped, so single-pod relists (evented mode) count
// at once.
type runningCollector struct{ cache *Cache }

// Describe implements prometheus.Collector.
func (c runningCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- runningPodsDesc
	ch <- runningContainersDesc
}

// Collect implements prometheus.Collector.
func (c runningCollector) Collect(ch chan<- prometheus.Metric) {
	pods, containers := c.cache.running()
	ch <- prometheus.MustNewConstMetric(runningPodsDesc, prometheus.GaugeValue, float64(pods))
	for i, s := range containerStates {
		ch <- prometheus.MustNewConstMetric(runningContainersDesc, prometheus.GaugeValue, float64(containers[i]), s.name)
	}
}

// running counts the pods of the cache with a ready sandbox, and its
// containers in each of containerStates. A pod whose last status fetch
// failed is not counted until a fetch succeeds.
func (c *Cache) running() (pods int, containers [len(containerStates)]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.pods {
		if e.status == nil {
			continue
		}
		for _, sb := range e.status.SandboxStatuses {
			if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
				pods++
				break
			}
		}
		for _, cs := range e.status.ContainerStatuses {
			for i, s := range containerStates {
				if cs.GetState() == s.state {
					containers[i]++
					break
				}
			}
		}
	}
	return pods, containers
}
