package syncloop

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the loop's optional Prometheus collectors. A nil *metrics
// records nothing.
type metrics struct {
	inputs     *prometheus.CounterVec
	dispatches *prometheus.CounterVec
	skips      prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		inputs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodekit_syncloop_inputs_total",
			Help: "Inputs queued for the sync loop by kind (config, pleg, probe).",
		}, []string{"kind"}),
		dispatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodekit_syncloop_dispatches_total",
			Help: "Handler calls by kind (ADD, UPDATE, DELETE, REMOVE, RECONCILE, sync, periodic, housekeeping).",
		}, []string{"kind"}),
		skips: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "nodekit_syncloop_unhealthy_skips_total",
			Help: "Loop passes skipped because the container runtime was unhealthy.",
		}),
	}
	for _, c := range []prometheus.Collector{m.inputs, m.dispatches, m.skips} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("syncloop: register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) queued(kind string, n int) {
	if m == nil {
		return
	}
	m.inputs.WithLabelValues(kind).Add(float64(n))
}

func (m *metrics) dispatched(kind string) {
	if m == nil {
		return
	}
	m.dispatches.WithLabelValues(kind).Inc()
}

func (m *metrics) skipped() {
	if m == nil {
		return
	}
	m.skips.Inc()
}
