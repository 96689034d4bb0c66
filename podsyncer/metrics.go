package podsyncer

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/podsyncer/podplan"
)

// metrics are the kubelet's counters of what the syncer starts (upstream
// records them in its runtime manager's SyncPod).
type metrics struct {
	startedPods, startedPodsErrors       prometheus.Counter
	startedUserNS, startedUserNSErrors   prometheus.Counter
	startedContainers, startedCtrsErrors *prometheus.CounterVec
	// podStart is kubelet_pod_start_duration_seconds (the kubelet records
	// it in its own SyncPod, from the status manager's last status).
	podStart prometheus.Histogram
}

// podStartBuckets are the kubelet's pod startup duration buckets.
var podStartBuckets = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Subsystem: "kubelet", Name: name, Help: help})
	}
	m := &metrics{
		startedPods:       counter("started_pods_total", "[ALPHA] Cumulative number of pods started"),
		startedPodsErrors: counter("started_pods_errors_total", "[ALPHA] Cumulative number of errors when starting pods"),
		startedUserNS: counter("started_user_namespaced_pods_total",
			"[ALPHA] Cumulative number of pods with user namespaces started. This metric will only be collected on Linux."),
		startedUserNSErrors: counter("started_user_namespaced_pods_errors_total",
			"[ALPHA] Cumulative number of errors when starting pods with user namespaces. This metric will only be collected on Linux."),
		startedContainers: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: "started_containers_total",
			Help: "[ALPHA] Cumulative number of containers started"}, []string{"container_type"}),
		startedCtrsErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: "started_containers_errors_total",
			Help: "[ALPHA] Cumulative number of errors when starting containers"}, []string{"container_type", "code"}),
		podStart: prometheus.NewHistogram(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "pod_start_duration_seconds",
			Help: "[ALPHA] Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run", Buckets: podStartBuckets}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.startedPods, m.startedPodsErrors, m.startedUserNS, m.startedUserNSErrors,
		m.startedContainers, m.startedCtrsErrors, m.podStart} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// containerType is the kubelet's container_type label of a start.
func containerType(k podplan.Kind) string {
	switch k {
	case podplan.Init, podplan.Sidecar:
		return "init_container"
	case podplan.Ephemeral:
		return "ephemeral_container"
	}
	return "container"
}

// usesUserNamespace says whether the pod asks for its own user namespace.
func usesUserNamespace(pod *v1.Pod) bool {
	return pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers
}

// observePodStart records kubelet_pod_start_duration_seconds as the
// kubelet does before it hands a non-terminal status to its status
// manager: on the pod's first status (known: the manager had none) and
// when the phase goes from Pending to Running, the time since the pod's
// config.seen annotation. Unlike the kubelet, a pod without the
// annotation is not observed (the kubelet would record the time since
// the zero time on a first status).
func (m *metrics) observePodStart(pod *v1.Pod, old *v1.PodStatus, known bool, phase v1.PodPhase, now time.Time) {
	if m == nil {
		return
	}
	if known && (old.Phase != v1.PodPending || phase != v1.PodRunning) {
		return
	}
	seen, err := time.Parse(time.RFC3339Nano, pod.Annotations[kubetypes.ConfigFirstSeenAnnotationKey])
	if err != nil {
		return
	}
	m.podStart.Observe(now.Sub(seen).Seconds())
}
