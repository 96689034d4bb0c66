package podhandler

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/podworkers"
)

// metrics are the kubelet's housekeeping families, set by
// HandlePodCleanups as the kubelet's HandlePodCleanups sets them (help
// with its stability level, as component-base writes it). A nil *metrics
// records nothing.
type metrics struct {
	desired   *prometheus.GaugeVec
	active    *prometheus.GaugeVec
	mirrors   prometheus.Gauge
	working   *prometheus.GaugeVec
	restarted *prometheus.CounterVec
	orphaned  prometheus.Counter
}

// newMetrics registers the collectors on reg; nil for a nil reg. A
// collector already registered there is an error.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		desired: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "desired_pods",
			Help: "[ALPHA] The number of pods the kubelet is being instructed to run. static is true if the pod is not from the apiserver."},
			[]string{"static"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "active_pods",
			Help: "[ALPHA] The number of pods the kubelet considers active and which are being considered when admitting new pods. static is true if the pod is not from the apiserver."},
			[]string{"static"}),
		mirrors: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "mirror_pods",
			Help: "[ALPHA] The number of mirror pods the kubelet will try to create (one per admitted static pod)"}),
		working: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "working_pods",
			Help: "[ALPHA] Number of pods the kubelet is actually running, broken down by lifecycle phase, whether the pod is desired, orphaned, or runtime only (also orphaned), and whether the pod is static. An orphaned pod has been removed from local configuration or force deleted in the API and consumes resources that are not otherwise visible."},
			[]string{"lifecycle", "config", "static"}),
		restarted: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: "restarted_pods_total",
			Help: "[ALPHA] Number of pods that have been restarted because they were deleted and recreated with the same UID while the kubelet was watching them (common for static pods, extremely uncommon for API pods)"},
			[]string{"static"}),
		orphaned: prometheus.NewCounter(prometheus.CounterOpts{Subsystem: "kubelet", Name: "orphaned_runtime_pods_total",
			Help: "[ALPHA] Number of pods that have been detected in the container runtime without being already known to the pod worker. This typically indicates the kubelet was restarted while a pod was force deleted in the API or in the local configuration, which is unusual."}),
	}
	for _, c := range []prometheus.Collector{m.desired, m.active, m.mirrors, m.working, m.restarted, m.orphaned} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("podhandler: register metrics: %w", err)
		}
	}
	return m, nil
}

// pods sets the desired and active pods, by static, and the mirror pods.
func (m *metrics) pods(all, active []*v1.Pod, mirrors int) {
	if m == nil {
		return
	}
	count := func(g *prometheus.GaugeVec, pods []*v1.Pod) {
		static := 0
		for _, p := range pods {
			if kubetypes.IsStatic(p) {
				static++
			}
		}
		g.WithLabelValues("").Set(float64(len(pods) - static))
		g.WithLabelValues("true").Set(float64(static))
	}
	count(m.desired, all)
	count(m.active, active)
	m.mirrors.Set(float64(mirrors))
}

// restarts adds the pods restarted in one housekeeping pass, by static.
func (m *metrics) restarts(regular, static int) {
	if m == nil {
		return
	}
	m.restarted.WithLabelValues("").Add(float64(regular))
	m.restarted.WithLabelValues("true").Add(float64(static))
}

// orphans adds the runtime pods killed in one pass because no worker knew
// them.
func (m *metrics) orphans(n int) {
	if m == nil {
		return
	}
	m.orphaned.Add(float64(n))
}

// workingConfigs are the kubelet's valid combinations of a worker's
// config and static labels.
var workingConfigs = []struct {
	sync           podworkers.WorkerSync
	config, static string
}{
	{podworkers.WorkerSync{HasConfig: true, Static: true}, "desired", "true"},
	{podworkers.WorkerSync{HasConfig: true}, "desired", ""},
	{podworkers.WorkerSync{Orphan: true, HasConfig: true, Static: true}, "orphan", "true"},
	{podworkers.WorkerSync{Orphan: true, HasConfig: true}, "orphan", ""},
	{podworkers.WorkerSync{Orphan: true}, "runtime_only", "unknown"},
}

// lifecycle is the kubelet's name of a worker's state (a finished
// worker is terminated to the kubelet).
func lifecycle(s podworkers.State) string {
	switch s {
	case podworkers.StateSyncing:
		return "sync"
	case podworkers.StateTerminating:
		return "terminating"
	}
	return "terminated"
}

// workers sets kubelet_working_pods from what the workers know after a
// housekeeping pass, every valid combination included (0 when none).
func (m *metrics) workers(known map[types.UID]podworkers.WorkerSync) {
	if m == nil {
		return
	}
	counts := map[[3]string]int{}
	for _, ws := range known {
		key := podworkers.WorkerSync{Orphan: ws.Orphan, HasConfig: ws.HasConfig, Static: ws.Static && ws.HasConfig}
		for _, c := range workingConfigs {
			if c.sync == key {
				counts[[3]string{lifecycle(ws.State), c.config, c.static}]++
			}
		}
	}
	for _, c := range workingConfigs {
		for _, l := range []string{"sync", "terminating", "terminated"} {
			m.working.WithLabelValues(l, c.config, c.static).Set(float64(counts[[3]string{l, c.config, c.static}]))
		}
	}
}
