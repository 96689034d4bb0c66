package podstartup

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ErrInvalidConfig wraps every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("podstartup: invalid config")

// The kubelet's histogram buckets for pod startup durations, in seconds.
var startupBuckets = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}

// Config configures a Tracker.
type Config struct {
	// Clock times image pulls and the moment a pod is seen started;
	// default the real clock.
	Clock clock.PassiveClock
	// Registerer receives the metrics; nil: none are exported (the
	// durations are still logged).
	Registerer prometheus.Registerer
	// Logger receives a line per pod whose startup was measured (level 2)
	// and when a pod is first seen started (level 3); default
	// klog.Background().
	Logger *klog.Logger
}

// Tracker measures pod startup latency. Build it with New.
type Tracker struct {
	clock  clock.PassiveClock
	logger klog.Logger
	sli    prometheus.Histogram
	total  prometheus.Histogram
	first  prometheus.Gauge

	mu            sync.Mutex
	pods          map[types.UID]*record
	unschedulable map[types.UID]struct{}
	firstSeen     bool
}

type record struct {
	pullStarts []time.Time // open pulls, oldest first
	pulls      []span      // finished pulls, by start
	initStart  time.Time   // the running init container's start; zero: none
	initTotal  time.Duration
	running    time.Time // when a written status first showed every container running
}

type span struct{ start, end time.Time }

// New returns a Tracker; it fails if a metric cannot be registered.
func New(cfg Config) (*Tracker, error) {
	t := &Tracker{clock: cfg.Clock, pods: map[types.UID]*record{}, unschedulable: map[types.UID]struct{}{}}
	if t.clock == nil {
		t.clock = clock.RealClock{}
	}
	t.logger = klog.Background()
	if cfg.Logger != nil {
		t.logger = *cfg.Logger
	}
	t.sli = prometheus.NewHistogram(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "pod_start_sli_duration_seconds",
		Help:    "[ALPHA] Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
		Buckets: startupBuckets})
	t.total = prometheus.NewHistogram(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "pod_start_total_duration_seconds",
		Help:    "[ALPHA] Duration in seconds to start a pod since creation, including time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
		Buckets: startupBuckets})
	t.first = prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "first_network_pod_start_sli_duration_seconds",
		Help: "[INTERNAL] Duration in seconds to start the first network pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch"})
	if r := cfg.Registerer; r != nil {
		for _, c := range []prometheus.Collector{t.sli, t.total, t.first} {
			if err := r.Register(c); err != nil {
				return nil, fmt.Errorf("%w: register metrics: %w", ErrInvalidConfig, err)
			}
		}
	}
	return t, nil
}

// ObservedOnWatch is called with every pod the API sends the node (static
// pods excluded), each time it is sent.
func (t *Tracker) ObservedOnWatch(pod *v1.Pod) {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		delete(t.pods, pod.UID)
		return
	}
	r := t.pods[pod.UID]
	if r == nil {
		if _, ok := t.unschedulable[pod.UID]; ok || !pod.Status.StartTime.IsZero() {
			return // started before it was seen, or excluded
		}
		if unschedulable(pod) {
			t.unschedulable[pod.UID] = struct{}{}
			return
		}
		t.pods[pod.UID] = &record{}
		return
	}
	if unschedulable(pod) {
		delete(t.pods, pod.UID)
		t.unschedulable[pod.UID] = struct{}{}
		return
	}
	if r.running.IsZero() || !allStarted(pod) {
		return
	}
	total := now.Sub(pod.CreationTimestamp.Time)
	pulls := pullTime(r.pulls)
	sli := total - pulls - r.initTotal
	stateful := stateful(pod)
	t.logger.V(2).Info("Observed pod startup duration", "pod", klog.KObj(pod), "podStartSLOduration", sli.Seconds(),
		"podStartE2EDuration", total, "totalImagesPullingTime", pulls, "totalInitContainerRuntime", r.initTotal,
		"isStatefulPod", stateful, "podCreationTimestamp", pod.CreationTimestamp.Time, "observedRunningTime", r.running,
		"watchObservedRunningTime", now)
	t.total.Observe(total.Seconds())
	if !stateful {
		t.sli.Observe(sli.Seconds())
		if !pod.Spec.HostNetwork && !t.firstSeen {
			t.first.Set(sli.Seconds())
			t.firstSeen = true
		}
	}
	delete(t.pods, pod.UID)
}

// StatusWritten is called with the pod the API returned after a status
// write that changed it.
func (t *Tracker) StatusWritten(pod *v1.Pod) {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.pods[pod.UID]; r != nil && r.running.IsZero() && allStarted(pod) {
		t.logger.V(3).Info("Mark when the pod was running for the first time", "pod", klog.KObj(pod), "rv", pod.ResourceVersion)
		r.running = now
	}
}

// ImagePullStarted is called when a pull of one of the pod's images
// starts (before it waits for a pull slot).
func (t *Tracker) ImagePullStarted(uid types.UID) {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.pods[uid]; r != nil {
		r.pullStarts = append(r.pullStarts, now)
	}
}

// ImagePullFinished is called when a pull of one of the pod's images
// succeeded, or when an image turned out present (another pod pulled it):
// it ends the oldest open pull.
func (t *Tracker) ImagePullFinished(uid types.UID) {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.pods[uid]; r != nil && len(r.pullStarts) > 0 {
		r.pulls = append(r.pulls, span{r.pullStarts[0], now})
		r.pullStarts = r.pullStarts[1:]
	}
}

// InitContainerStarted is called when a regular init container of the pod
// was started at at.
func (t *Tracker) InitContainerStarted(uid types.UID, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.pods[uid]; r != nil {
		r.initStart = at
	}
}

// InitContainerFinished is called when the runtime reports a regular init
// container of the pod exited at at (it may be called again for the same
// exit). It ends the running init container's time; an exit before that
// container started (an earlier init container's) is ignored.
func (t *Tracker) InitContainerFinished(uid types.UID, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.pods[uid]; r != nil && !r.initStart.IsZero() && at.After(r.initStart) {
		r.initTotal += at.Sub(r.initStart)
		r.initStart = time.Time{}
	}
}

// Forget drops what the Tracker holds of a pod that is gone.
func (t *Tracker) Forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pods, uid)
	delete(t.unschedulable, uid)
}

// Tracked is the number of pods the Tracker holds a record of.
func (t *Tracker) Tracked() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pods) + len(t.unschedulable)
}

// allStarted: every regular container runs, with a start time.
func allStarted(pod *v1.Pod) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil || cs.State.Running.StartedAt.IsZero() {
			return false
		}
	}
	return true
}

// pullTime is the time covered by the pulls (sorted by start), overlaps
// counted once.
func pullTime(pulls []span) time.Duration {
	var total time.Duration
	var end time.Time
	for i, p := range pulls {
		switch {
		case i == 0 || p.start.After(end):
			total += p.end.Sub(p.start)
			end = p.end
		case p.end.After(end):
			total += p.end.Sub(end)
			end = p.end
		}
	}
	return total
}

// stateful: the pod mounts a volume other than the ephemeral kinds the SLI
// allows (secret, configMap, downwardAPI, emptyDir, projected).
func stateful(pod *v1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Secret == nil && v.ConfigMap == nil && v.DownwardAPI == nil && v.EmptyDir == nil && v.Projected == nil {
			return true
		}
	}
	return false
}

// unschedulable: the scheduler could not place the pod at once
// (PodScheduled False), which the SLI excludes.
func unschedulable(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
			return true
		}
	}
	return false
}
