package eviction

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the upstream eviction metrics; a nil *metrics records nothing.
type metrics struct {
	evictions *prometheus.CounterVec
	statsAge  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "evictions",
			Help: "[ALPHA] Cumulative number of pod evictions by eviction signal",
		}, []string{"eviction_signal"}),
		statsAge: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "eviction_stats_age_seconds",
			Help:    "[ALPHA] Time between when stats are collected, and when pod is evicted based on those stats by eviction signal",
			Buckets: prometheus.DefBuckets,
		}, []string{"eviction_signal"}),
	}
	for _, c := range []prometheus.Collector{m.evictions, m.statsAge} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) evicted(s Signal) {
	if m != nil {
		m.evictions.WithLabelValues(string(s)).Inc()
	}
}

func (m *metrics) observeStatsAge(now time.Time, ts []Threshold, obs Observations) {
	if m == nil {
		return
	}
	for _, t := range ts {
		if o := obs[t.Signal]; !o.Time.IsZero() {
			m.statsAge.WithLabelValues(string(t.Signal)).Observe(now.Sub(o.Time).Seconds())
		}
	}
}
