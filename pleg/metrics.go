package pleg

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the generator's optional Prometheus collectors, named as the
// kubelet's where one exists. A nil *metrics records nothing.
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

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		relistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubelet_pleg_relist_duration_seconds", Help: "Duration in seconds for relisting pods in PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
		relistInterval: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubelet_pleg_relist_interval_seconds", Help: "Interval in seconds between relisting in PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
		podRelistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubelet_pleg_pod_relist_duration_seconds", Help: "Duration in seconds for relisting a single pod in PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
		lastSeen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubelet_pleg_last_seen_seconds", Help: "Timestamp in seconds when PLEG was last seen active.",
		}),
		discarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubelet_pleg_discard_events",
			Help: "The number of events not delivered individually because the event channel was full; each was coalesced into a PodSync for its pod.",
		}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodekit_pleg_events_total", Help: "Pod lifecycle events delivered, by type.",
		}, []string{"type"}),
		connSuccess: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubelet_evented_pleg_connection_success_count",
			Help: "The number of times a streaming client was obtained to receive CRI Events.",
		}),
		connError: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubelet_evented_pleg_connection_error_count",
			Help: "The number of errors encountered during the establishment of streaming connection with the CRI runtime.",
		}),
		connLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubelet_evented_pleg_connection_latency_seconds",
			Help:    "The latency of streaming connection with the CRI runtime, measured in seconds.",
			Buckets: prometheus.DefBuckets,
		}),
	}
	for _, c := range []prometheus.Collector{m.relistDuration, m.relistInterval, m.podRelistDuration, m.lastSeen,
		m.discarded, m.events, m.connSuccess, m.connError, m.connLatency} {
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
