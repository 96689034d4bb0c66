package podworkers

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the workers' optional Prometheus collectors; a nil *metrics
// records nothing.
type metrics struct {
	duration *prometheus.HistogramVec
	panics   prometheus.Counter
}

// newMetrics registers the collectors with reg, or returns nil for a nil
// reg. An already registered collector of the same name is reused.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet",
			Name:      "pod_worker_duration_seconds",
			Help:      "Duration in seconds to sync a single pod. Broken down by operation type: create, update, sync, kill or terminated.",
			Buckets:   prometheus.DefBuckets,
		}, []string{"operation_type"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "nodekit",
			Name:      "pod_worker_syncer_panics_total",
			Help:      "Number of panics recovered from pod syncer calls.",
		}),
	}
	var err error
	m.duration, err = register(reg, m.duration)
	if err != nil {
		return nil, err
	}
	m.panics, err = register(reg, m.panics)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("podworkers: registering metrics: %w", err)
	}
	return c, nil
}

// observe records the time from an update's StartTime to the end of the
// sync that realised it.
func (m *metrics) observe(u *unit, d time.Duration) {
	if m == nil {
		return
	}
	op := u.typ.String()
	if u.work == StateTerminated {
		op = "terminated"
	}
	m.duration.WithLabelValues(op).Observe(d.Seconds())
}

func (m *metrics) recordPanic() {
	if m != nil {
		m.panics.Inc()
	}
}
