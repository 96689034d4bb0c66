package kubeletapi

import (
	"fmt"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/procfs"
)

// healthcheckType is the type label of the checks /healthz runs: the
// first segment of its path, as the apiserver's healthz handler names it.
const healthcheckType = "healthz"

// sliMetrics are the families the kubelet serves at /metrics/slis
// (component-base's slis package), on a registry of the Server's own:
// each /healthz run's result per check, and the process's start time.
type sliMetrics struct {
	registry    *prometheus.Registry
	healthcheck *prometheus.GaugeVec
	checks      *prometheus.CounterVec
}

// newSLIMetrics builds the registry, with process_start_time_seconds set
// to start (seconds since the Unix epoch).
func newSLIMetrics(start float64) (*sliMetrics, error) {
	m := &sliMetrics{
		registry: prometheus.NewRegistry(),
		healthcheck: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "kubernetes", Name: "healthcheck",
			Help: "[STABLE] This metric records the result of a single healthcheck."}, []string{"name", "type"}),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "kubernetes", Name: "healthchecks_total",
			Help: "[STABLE] This metric records the results of all healthcheck."}, []string{"name", "type", "status"}),
	}
	startTime := prometheus.NewGauge(prometheus.GaugeOpts{Name: "process_start_time_seconds",
		Help: "[ALPHA] Start time of the process since unix epoch in seconds."})
	startTime.Set(start)
	for _, c := range []prometheus.Collector{m.healthcheck, m.checks, startTime} {
		if err := m.registry.Register(c); err != nil {
			return nil, fmt.Errorf("kubeletapi: register /metrics/slis: %w", err)
		}
	}
	return m, nil
}

// observe records one run of the check name by /healthz: the gauge 1 if
// it passed, else 0, and the run counted by its status ("success",
// "error").
func (m *sliMetrics) observe(name string, passed bool) {
	value, status := 1.0, "success"
	if !passed {
		value, status = 0, "error"
	}
	m.healthcheck.WithLabelValues(name, healthcheckType).Set(value)
	m.checks.WithLabelValues(name, healthcheckType, status).Inc()
}

// handler serves the registry, and resets the health check series on
// DELETE, answering "metrics reset" (component-base's HandlerWithReset,
// which the kubelet installs there).
func (m *sliMetrics) handler() http.Handler {
	serve := promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodDelete {
			serve.ServeHTTP(w, r)
			return
		}
		m.healthcheck.Reset()
		m.checks.Reset()
		_, _ = io.WriteString(w, "metrics reset\n")
	})
}

// processStartTime reads this process's start time, in seconds since the
// Unix epoch, as component-base's RegisterProcessStartTime does: from
// procfs, the boot time plus the process's start in clock ticks.
func processStartTime() (float64, error) {
	p, err := procfs.Self()
	if err != nil {
		return 0, err
	}
	stat, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return stat.StartTime()
}
