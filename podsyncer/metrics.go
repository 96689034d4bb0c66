package podsyncer

import (
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/podsyncer/podplan"
)

// metrics are the kubelet's counters of what the syncer starts (upstream
// records them in its runtime manager's SyncPod).
type metrics struct {
	startedPods, startedPodsErrors       prometheus.Counter
	startedUserNS, startedUserNSErrors   prometheus.Counter
	startedContainers, startedCtrsErrors *prometheus.CounterVec
}

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
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.startedPods, m.startedPodsErrors, m.startedUserNS, m.startedUserNSErrors,
		m.startedContainers, m.startedCtrsErrors} {
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
