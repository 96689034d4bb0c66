package eviction

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/internal/parking"
	"github.com/nodekit/nodekit/kubetypes"
)

// Manager evaluates eviction thresholds against node statistics, reports
// pressure conditions and evicts at most one pod per pass. Its query
// methods are safe for concurrent use; passes are serialised.
type Manager struct {
	cfg     Config
	metrics *metrics
	trigger chan struct{}

	pass   sync.Mutex    // serialises Synchronize
	parked parking.State // Run's waiting state, for NextWake

	mu                sync.RWMutex // guards the fields below
	conditions        []v1.NodeConditionType
	conditionsLastAt  map[v1.NodeConditionType]time.Time
	thresholdsFirstAt map[thresholdKey]time.Time
	thresholdsMet     []Threshold
	lastObservations  Observations
}

// Result describes one pass: what was observed, which thresholds drive
// eviction, and what was done about it.
type Result struct {
	// Observations are the signal values of this pass.
	Observations Observations
	// Conditions are the pressure conditions now reported (including those
	// held by the transition period).
	Conditions []v1.NodeConditionType
	// Thresholds are the thresholds met past their grace period with fresh
	// statistics; empty when nothing is starved.
	Thresholds []Threshold
	// Signal and Resource name what the pass tried to reclaim.
	Signal   Signal
	Resource v1.ResourceName
	// Reclaimed is true when node-level reclaim relieved the pressure and
	// no pod had to be evicted.
	Reclaimed bool
	// Evicted is the pod killed by this pass, if any (also when KillPod
	// returned an error, as the kill was attempted).
	Evicted *v1.Pod
	// GracePeriodSeconds is the grace period the pod was killed with.
	GracePeriodSeconds int64
	// Message is the eviction message given to the pod.
	Message string
}

// New validates cfg and returns a Manager.
func New(cfg Config) (*Manager, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &Manager{
		cfg:               cfg,
		trigger:           make(chan struct{}, 1),
		conditionsLastAt:  map[v1.NodeConditionType]time.Time{},
		thresholdsFirstAt: map[thresholdKey]time.Time{},
	}
	if m.metrics, err = newMetrics(cfg.Registerer); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return m, nil
}

// Thresholds returns the enforced thresholds, containerfs ones included.
func (m *Manager) Thresholds() []Threshold { return slices.Clone(m.cfg.Thresholds) }

// IsUnderMemoryPressure reports whether MemoryPressure is true.
func (m *Manager) IsUnderMemoryPressure() bool { return m.hasCondition(v1.NodeMemoryPressure) }

// IsUnderDiskPressure reports whether DiskPressure is true.
func (m *Manager) IsUnderDiskPressure() bool { return m.hasCondition(v1.NodeDiskPressure) }

// IsUnderPIDPressure reports whether PIDPressure is true.
func (m *Manager) IsUnderPIDPressure() bool { return m.hasCondition(v1.NodePIDPressure) }

// Conditions returns the pressure conditions currently reported.
func (m *Manager) Conditions() []v1.NodeConditionType {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Clone(m.conditions)
}

func (m *Manager) hasCondition(c v1.NodeConditionType) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Contains(m.conditions, c)
}

// Admit is the admission check for the current conditions; see AdmitPod.
func (m *Manager) Admit(pod *v1.Pod) kubetypes.AdmitResult {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return AdmitPod(m.conditions, pod)
}

// Synchronize runs one pass: observe, update conditions and grace
// tracking, evict a pod over its local storage limits if there is one, and
// if a threshold drives eviction, reclaim node-level resources and,
// failing that, evict the first pod of the ranking. It
// returns what it did; an error means the statistics could not be read or
// the kill failed.
func (m *Manager) Synchronize(ctx context.Context) (Result, error) {
	m.pass.Lock()
	defer m.pass.Unlock()
	logger := klog.FromContext(ctx)
	if len(m.cfg.Thresholds) == 0 && m.cfg.DisableLocalStorageLimits {
		return Result{}, nil
	}
	pods := m.cfg.ActivePods()
	summary, err := m.cfg.Summary.Get(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("eviction: get summary: %w", err)
	}
	obs := Observe(summary)
	stats := statsByUID(summary.Pods)
	res := m.evaluate(obs)
	if !m.cfg.DisableLocalStorageLimits {
		if r, evicted, err := m.evictForLocalStorage(ctx, res, pods, stats); evicted {
			return r, err
		}
	}
	if len(res.Thresholds) == 0 {
		logger.V(3).Info("Eviction manager: no resources are starved")
		return res, nil
	}
	m.metrics.observeStatsAge(m.cfg.Clock.Now(), res.Thresholds, obs)
	t, starved, _ := starvedResource(res.Thresholds)
	res.Signal, res.Resource = t.Signal, starved
	logger.Info("Eviction manager: attempting to reclaim", "resourceName", starved, "signal", t.Signal)
	if m.cfg.Recorder != nil && m.cfg.NodeRef != nil {
		m.cfg.Recorder.Eventf(m.cfg.NodeRef, v1.EventTypeWarning, "EvictionThresholdMet", "Attempting to reclaim %s", starved)
	}
	if ok, err := m.reclaimNodeLevel(ctx, t.Signal); err != nil {
		return res, err
	} else if ok {
		logger.Info("Eviction manager: able to reduce resource pressure without evicting pods", "resourceName", starved)
		res.Reclaimed = true
		return res, nil
	}
	if len(pods) == 0 {
		logger.Error(nil, "Eviction manager: eviction thresholds have been met, but no pods are active to evict")
		return res, nil
	}
	RankForEviction(pods, t.Signal, stats, m.cfg.DedicatedImageFs, m.cfg.SplitContainerFs)
	return m.evictFirst(ctx, res, t, pods, stats)
}

// evaluate applies the threshold, grace and transition policies to a new
// set of observations and updates the manager's state. res.Thresholds are
// the thresholds that drive eviction, memory first.
func (m *Manager) evaluate(obs Observations) Result {
	now := m.cfg.Clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	met := thresholdsMet(m.cfg.Thresholds, obs, false)
	if len(m.thresholdsMet) > 0 {
		met = mergeThresholds(met, thresholdsMet(m.thresholdsMet, obs, true))
	}
	m.thresholdsFirstAt = firstObservedAt(met, m.thresholdsFirstAt, now)
	m.conditionsLastAt = conditionsLastObservedAt(nodeConditionsOf(met), m.conditionsLastAt, now)
	m.conditions = conditionsObservedSince(m.conditionsLastAt, m.cfg.PressureTransitionPeriod, now)
	for c, at := range m.conditionsLastAt {
		if now.Sub(at) >= m.cfg.PressureTransitionPeriod {
			delete(m.conditionsLastAt, c)
		}
	}
	m.thresholdsMet = thresholdsMetGracePeriod(met, m.thresholdsFirstAt, now)
	driving := thresholdsUpdatedStats(m.thresholdsMet, obs, m.lastObservations)
	m.lastObservations = obs
	sortByEvictionPriority(driving)
	return Result{Observations: obs, Conditions: slices.Clone(m.conditions), Thresholds: driving}
}

// reclaimFuncs returns the node-level reclaim functions for a signal
// under the configured filesystem layout, as upstream.
func (m *Manager) reclaimFuncs(s Signal) []ReclaimFunc {
	containers, images := m.cfg.DeleteUnusedContainers, m.cfg.DeleteUnusedImages
	var fs []ReclaimFunc
	switch {
	case s.Resource() != v1.ResourceEphemeralStorage && s.Resource() != ResourceInodes:
		return nil
	case m.cfg.DedicatedImageFs && !m.cfg.SplitContainerFs:
		if s == SignalNodeFsAvailable || s == SignalNodeFsInodesFree {
			return nil
		}
		fs = []ReclaimFunc{containers, images}
	case m.cfg.DedicatedImageFs && m.cfg.SplitContainerFs:
		if s == SignalImageFsAvailable || s == SignalImageFsInodesFree {
			fs = []ReclaimFunc{images}
		} else {
			fs = []ReclaimFunc{containers}
		}
	default:
		fs = []ReclaimFunc{containers, images}
	}
	return slices.DeleteFunc(fs, func(f ReclaimFunc) bool { return f == nil })
}

// reclaimNodeLevel runs the reclaim functions for s and reports whether a
// fresh observation shows every threshold relieved (min-reclaim included).
func (m *Manager) reclaimNodeLevel(ctx context.Context, s Signal) (bool, error) {
	fs := m.reclaimFuncs(s)
	if len(fs) == 0 {
		return false, nil
	}
	logger := klog.FromContext(ctx)
	for _, f := range fs {
		if err := f(ctx); err != nil {
			logger.Error(err, "Eviction manager: node-level reclaim failed", "signal", s)
		}
	}
	summary, err := m.cfg.Summary.Get(ctx)
	if err != nil {
		return false, fmt.Errorf("eviction: get summary after reclaim: %w", err)
	}
	return len(thresholdsMet(m.cfg.Thresholds, Observe(summary), true)) == 0, nil
}

// evictFirst kills the first non-critical pod of the ranking.
func (m *Manager) evictFirst(ctx context.Context, res Result, t Threshold, pods []*v1.Pod, stats StatsFunc) (Result, error) {
	logger := klog.FromContext(ctx)
	for _, pod := range pods {
		if IsCriticalPod(pod) {
			logger.Info("Eviction manager: cannot evict a critical pod", "pod", klog.KObj(pod))
			continue
		}
		grace := HardEvictionGracePeriodSeconds
		if !t.IsHard() {
			grace = m.cfg.MaxPodGracePeriodSeconds
			if tg := pod.Spec.TerminationGracePeriodSeconds; tg != nil {
				grace = min(grace, *tg)
			}
		}
		msg, annotations := EvictionMessage(res.Resource, pod, stats, res.Thresholds, res.Observations)
		res.Evicted, res.GracePeriodSeconds, res.Message = pod, grace, msg
		if m.cfg.Recorder != nil {
			m.cfg.Recorder.AnnotatedEventf(pod, annotations, v1.EventTypeWarning, Reason, "%s", msg)
		}
		m.metrics.evicted(t.Signal)
		logger.Info("Eviction manager: evicting pod", "pod", klog.KObj(pod), "podUID", pod.UID, "gracePeriod", grace, "message", msg)
		now := metav1.NewTime(m.cfg.Clock.Now())
		if err := m.cfg.KillPod(ctx, pod, grace, evictedStatus(pod, msg, now)); err != nil {
			return res, fmt.Errorf("eviction: kill pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		return res, nil
	}
	logger.Info("Eviction manager: unable to evict any pods from the node")
	return res, nil
}

// evictedStatus returns the status mutation for an evicted pod.
func evictedStatus(pod *v1.Pod, msg string, now metav1.Time) func(*v1.PodStatus) {
	return func(s *v1.PodStatus) {
		s.Phase = v1.PodFailed
		s.Reason = Reason
		s.Message = msg
		c := v1.PodCondition{
			Type:               v1.DisruptionTarget,
			ObservedGeneration: pod.Generation,
			Status:             v1.ConditionTrue,
			Reason:             v1.PodReasonTerminationByKubelet,
			Message:            msg,
			LastTransitionTime: now,
		}
		for i := range s.Conditions {
			if s.Conditions[i].Type == v1.DisruptionTarget {
				if s.Conditions[i].Status == c.Status {
					c.LastTransitionTime = s.Conditions[i].LastTransitionTime
				}
				s.Conditions[i] = c
				return
			}
		}
		s.Conditions = append(s.Conditions, c)
	}
}
