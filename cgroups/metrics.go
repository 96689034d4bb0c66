package cgroups

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The operation_type values of kubelet_cgroup_manager_duration_seconds,
// as the kubelet's cgroup manager records them.
const (
	opCreate  = "create"
	opUpdate  = "update"
	opDestroy = "destroy"
)

// metrics are the Manager's optional collectors, named as the kubelet's
// (help with its stability level, as component-base writes it); a nil
// *metrics records nothing.
type metrics struct {
	duration *prometheus.HistogramVec
	version  prometheus.Gauge
}

// newMetrics registers the collectors on reg and sets the cgroup version
// (2 for the unified hierarchy, else 1); nil for a nil reg. A collector
// already registered there is an error, and nothing is left registered.
func newMetrics(reg prometheus.Registerer, v2 bool) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	mt := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "cgroup_manager_duration_seconds",
			Help:    "[ALPHA] Duration in seconds for cgroup manager operations. Broken down by method.",
			Buckets: prometheus.DefBuckets,
		}, []string{"operation_type"}),
		version: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "cgroup_version",
			Help: "[ALPHA] cgroup version on the hosts."}),
	}
	collectors := []prometheus.Collector{mt.duration, mt.version}
	for i, c := range collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range collectors[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("cgroups: register metrics: %w", err)
		}
	}
	version := 1.0
	if v2 {
		version = 2
	}
	mt.version.Set(version)
	return mt, nil
}

// operation records one cgroup operation of type op that took d.
func (mt *metrics) operation(op string, d time.Duration) {
	if mt == nil {
		return
	}
	mt.duration.WithLabelValues(op).Observe(d.Seconds())
}

// timed records the time from start to now on m's clock as an operation
// of type op; call it deferred.
func (m *Manager) timed(op string, start time.Time) {
	m.metrics.operation(op, m.cfg.Clock.Since(start))
}
