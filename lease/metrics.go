package lease

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the controller's optional Prometheus collectors. A nil
// *metrics records nothing.
type metrics struct {
	renewals *prometheus.CounterVec
	latency  prometheus.Histogram
	lateness prometheus.Histogram
	leases   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodekit_lease_renewals_total",
			Help: "Lease renewals by result (success, failure).",
		}, []string{"result"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "nodekit_lease_renew_duration_seconds",
			Help:    "Time one renewal took, API requests included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "nodekit_lease_renew_lateness_seconds",
			Help:    "How long after its scheduled time a renewal started.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		leases: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nodekit_lease_managed_leases",
			Help: "Number of leases the controller renews.",
		}),
	}
	for _, c := range []prometheus.Collector{m.renewals, m.latency, m.lateness, m.leases} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("lease: register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) renewed(err error, seconds, lateSeconds float64) {
	if m == nil {
		return
	}
	result := "success"
	if err != nil {
		result = "failure"
	}
	m.renewals.WithLabelValues(result).Inc()
	m.latency.Observe(seconds)
	m.lateness.Observe(lateSeconds)
}

func (m *metrics) setLeases(n int) {
	if m == nil {
		return
	}
	m.leases.Set(float64(n))
}
