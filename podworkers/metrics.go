package podworkers

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/kubetypes"
)

// metrics are the workers' optional Prometheus collectors, named as the
// kubelet's where one exists (help with its stability level, as
// component-base writes it); a nil *metrics records nothing.
type metrics struct {
	duration   *prometheus.HistogramVec
	start      prometheus.Histogram
	containers prometheus.Histogram
	panics     prometheus.Counter
}

// newMetrics registers the collectors with reg, or returns nil for a nil
// reg. A collector already registered there (a second Workers on one
// registry) is an error.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet",
			Name:      "pod_worker_duration_seconds",
			Help:      "[ALPHA] Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
			Buckets:   prometheus.DefBuckets,
		}, []string{"operation_type"}),
		start: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubelet",
			Name:      "pod_worker_start_duration_seconds",
			Help:      "[ALPHA] Duration in seconds from kubelet seeing a pod to starting a worker.",
			Buckets:   prometheus.DefBuckets,
		}),
		containers: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubelet",
			Name:      "containers_per_pod_count",
			Help:      "[ALPHA] The number of containers per pod.",
			Buckets:   prometheus.ExponentialBuckets(1, 2, 5),
		}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "nodekit",
			Name:      "pod_worker_syncer_panics_total",
			Help:      "Number of panics recovered from pod syncer calls.",
		}),
	}
	for _, c := range []prometheus.Collector{m.duration, m.start, m.containers, m.panics} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("%w: registering metrics: %w", ErrInvalidConfig, err)
		}
	}
	return m, nil
}

// podStarted records the containers of a pod a worker starts for the
// first time (nothing for a runtime pod without config).
func (m *metrics) podStarted(pod *v1.Pod) {
	if m == nil || pod == nil {
		return
	}
	m.containers.Observe(float64(len(pod.Spec.Containers)))
}

// started records, as a create's SyncPod begins, the time since the pod
// was first seen: its config.seen annotation (set by syncloop's sources,
// as the kubelet's), else the update's StartTime; neither, nothing.
func (m *metrics) started(pod *v1.Pod, received, now time.Time) {
	if m == nil {
		return
	}
	seen := received
	if s, ok := pod.Annotations[kubetypes.ConfigFirstSeenAnnotationKey]; ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			seen = t
		}
	}
	if !seen.IsZero() {
		m.start.Observe(now.Sub(seen).Seconds())
	}
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
