package prober

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Manager's optional Prometheus collectors. A nil *metrics
// records nothing.
type metrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	lateness prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "prober_probe_total",
			Help: "[BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.",
		}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "prober_probe_duration_seconds",
			Help:    "[ALPHA] Duration in seconds for a probe response.",
			Buckets: prometheus.DefBuckets,
		}, []string{"probe_type", "container", "pod", "namespace"}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "nodekit_prober_probe_lateness_seconds",
			Help:    "How long after its scheduled time a probe started.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
	}
	for _, c := range []prometheus.Collector{m.total, m.duration, m.lateness} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("prober: register metrics: %w", err)
		}
	}
	return m, nil
}

// resultLabel is upstream's "result" label value.
func resultLabel(r Result) string {
	switch r {
	case Success:
		return "successful"
	case Failure:
		return "failed"
	}
	return "unknown"
}

// observe counts one probe of w with result r; seconds is its duration,
// recorded for successful and unknown results like upstream.
func (m *metrics) observe(w *worker, r Result, seconds float64) {
	if m == nil {
		return
	}
	p := w.pod
	m.total.WithLabelValues(w.key.probe.String(), resultLabel(r), w.key.container, p.Name, p.Namespace, string(p.UID)).Inc()
	if r != Failure {
		m.duration.WithLabelValues(w.key.probe.String(), w.key.container, p.Name, p.Namespace).Observe(seconds)
	}
}

// forget deletes the series of a worker that stopped.
func (m *metrics) forget(w *worker) {
	if m == nil {
		return
	}
	p := w.pod
	for _, r := range []Result{Success, Failure, Unknown} {
		m.total.DeleteLabelValues(w.key.probe.String(), resultLabel(r), w.key.container, p.Name, p.Namespace, string(p.UID))
	}
	m.duration.DeleteLabelValues(w.key.probe.String(), w.key.container, p.Name, p.Namespace)
}

func (m *metrics) late(seconds float64) {
	if m == nil {
		return
	}
	m.lateness.Observe(seconds)
}
