package criinstrument

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	criapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/utils/clock"
)

// ErrInvalidConfig wraps the errors New returns for a Config it cannot
// use.
var ErrInvalidConfig = errors.New("criinstrument: invalid config")

// Config configures the metrics. Every field is optional.
type Config struct {
	// Registerer receives the collectors; nil records nothing (the
	// wrappers then only pass calls through).
	Registerer prometheus.Registerer
	// Clock times the calls; default the real clock.
	Clock clock.PassiveClock
}

// Metrics holds the runtime operation collectors and wraps runtime and
// image services so that their calls are recorded. It is safe for
// concurrent use.
type Metrics struct {
	clock       clock.PassiveClock
	ops         *prometheus.CounterVec
	errs        *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	sandboxTime *prometheus.HistogramVec
	sandboxErrs *prometheus.CounterVec
}

// New registers the collectors on cfg.Registerer (if set) and returns the
// Metrics. A collector already registered there (a second New on one
// registry) is an error wrapping ErrInvalidConfig.
func New(cfg Config) (*Metrics, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	m := &Metrics{clock: cfg.Clock}
	if cfg.Registerer == nil {
		return m, nil
	}
	m.ops = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "kubelet", Name: "runtime_operations_total",
		Help: "[ALPHA] Cumulative number of runtime operations by operation type.",
	}, []string{"operation_type"})
	m.errs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "kubelet", Name: "runtime_operations_errors_total",
		Help: "[ALPHA] Cumulative number of runtime operation errors by operation type.",
	}, []string{"operation_type"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "kubelet", Name: "runtime_operations_duration_seconds",
		Help:    "[ALPHA] Duration in seconds of runtime operations. Broken down by operation type.",
		Buckets: prometheus.ExponentialBuckets(.005, 2.5, 14),
	}, []string{"operation_type"})
	m.sandboxTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "kubelet", Name: "run_podsandbox_duration_seconds",
		Help:    "[ALPHA] Duration in seconds of the run_podsandbox operations. Broken down by RuntimeClass.Handler.",
		Buckets: prometheus.DefBuckets,
	}, []string{"runtime_handler"})
	m.sandboxErrs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "kubelet", Name: "run_podsandbox_errors_total",
		Help: "[ALPHA] Cumulative number of the run_podsandbox operation errors by RuntimeClass.Handler.",
	}, []string{"runtime_handler"})
	for _, c := range []prometheus.Collector{m.ops, m.errs, m.duration, m.sandboxTime, m.sandboxErrs} {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("%w: register metrics: %w", ErrInvalidConfig, err)
		}
	}
	return m, nil
}

// Runtime wraps rt (not nil): every call is recorded under its operation
// name, then answered by rt.
func (m *Metrics) Runtime(rt criapi.RuntimeService) *RuntimeService {
	return &RuntimeService{rt: rt, m: m}
}

// Images wraps images (not nil): every call is recorded under its
// operation name, then answered by images.
func (m *Metrics) Images(images criapi.ImageManagerService) *ImageService {
	return &ImageService{is: images, m: m}
}

// record counts one call of operation that started at start and ended
// with err.
func (m *Metrics) record(operation string, start time.Time, err error) {
	if m.ops == nil {
		return
	}
	m.ops.WithLabelValues(operation).Inc()
	m.duration.WithLabelValues(operation).Observe(m.clock.Since(start).Seconds())
	if err != nil {
		m.errs.WithLabelValues(operation).Inc()
	}
}

// recordSandbox adds a RunPodSandbox call to its per-handler families.
func (m *Metrics) recordSandbox(handler string, start time.Time, err error) {
	if m.sandboxTime == nil {
		return
	}
	m.sandboxTime.WithLabelValues(handler).Observe(m.clock.Since(start).Seconds())
	if err != nil {
		m.sandboxErrs.WithLabelValues(handler).Inc()
	}
}
