package prober

import (
	"container/heap"
	"errors"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/kubetypes"
)

// Manager runs the probes of a node's pods and keeps their results. Create
// it with New, tell it about pods with AddPod/RemovePod/CleanupPods and
// their statuses with UpdatePodStatus, drive it with Run (or RunOnce), and
// receive result changes from Updates. All methods are safe for concurrent
// use.
type Manager struct {
	cfg     Config
	net     *network
	metrics *metrics
	start   time.Time // for the kubelet-restart grace, like upstream
	results [3]*resultCache

	mu      sync.Mutex
	workers map[probeKey]*worker
	pods    map[types.UID]*podStatus // latest status fed by UpdatePodStatus
	queue   schedule                 // workers waiting for their next run
	wake    chan struct{}            // 1-buffered: the schedule's head moved earlier
	// idle: Run waits, until idleUntil (zero: no probe scheduled); kicked:
	// a wake-up Run has not taken yet (NextWake).
	idle      bool
	idleUntil time.Time
	kicked    bool
	inFlight  int // probes popped off the schedule and not finished

	// onStart, if set (by tests), is called as each probe starts with its
	// scheduled and actual start times.
	onStart func(scheduled, started time.Time)
}

type probeKey struct {
	pod       types.UID
	container string
	probe     ProbeType
}

// New returns a Manager, or an error wrapping ErrInvalidConfig.
func New(cfg Config) (*Manager, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	met, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	m := &Manager{
		cfg:     cfg,
		net:     newNetwork(cfg.UserAgent, cfg.Clock),
		metrics: met,
		start:   cfg.Clock.Now(),
		workers: make(map[probeKey]*worker),
		pods:    make(map[types.UID]*podStatus),
		wake:    make(chan struct{}, 1),
	}
	for i := range m.results {
		m.results[i] = newResultCache()
		if sink := cfg.Sink; sink != nil {
			t := ProbeType(i)
			m.results[i].sink = func(u Update) { sink(t, u) }
		}
	}
	return m, nil
}

// Updates returns the channel on which changes of t's results are
// delivered while Run runs, when Config.Sink is nil. Updates for the same
// container coalesce while the receiver lags (the latest wins), so workers
// never wait for it. With a Sink the channels stay empty.
func (m *Manager) Updates(t ProbeType) <-chan Update {
	return m.cache(t).out
}

// Result returns the current t result of a container, and false if there
// is none. An ID without its runtime Type (a PLEG event's when the
// generator's RuntimeName is unset) finds the same result, as
// containerid.ID.Same matches it.
func (m *Manager) Result(t ProbeType, id containerid.ID) (Result, bool) {
	return m.cache(t).get(id.String())
}

func (m *Manager) cache(t ProbeType) *resultCache {
	if t < Liveness || t > Startup {
		t = Liveness
	}
	return m.results[t]
}

// AddPod starts the probes of pod's containers and sidecar (restartable
// init) containers. Probes that already run are left alone. Invalid probes
// are returned as errors wrapping ErrInvalidProbe; they are still added and
// report their error as an event each period without publishing a result,
// as upstream does; the valid ones run normally.
func (m *Manager) AddPod(pod *v1.Pod) error {
	var errs []error
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.cfg.Clock.Now()
	add := func(c *v1.Container, init bool) {
		for _, pt := range []struct {
			t ProbeType
			p *v1.Probe
		}{{Startup, c.StartupProbe}, {Readiness, c.ReadinessProbe}, {Liveness, c.LivenessProbe}} {
			if pt.p == nil {
				continue
			}
			key := probeKey{pod: pod.UID, container: c.Name, probe: pt.t}
			if _, ok := m.workers[key]; ok {
				continue
			}
			w := newWorker(m, key, pod, c, init, pt.p)
			if w.specErr != nil {
				errs = append(errs, w.specErr)
			}
			m.workers[key] = w
			w.slot = firstRun(now, w.spec.period, m.cfg.Rand())
			w.next = w.slot
			heap.Push(&m.queue, w)
			m.kickLocked(w)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i], false)
	}
	for i := range pod.Spec.InitContainers {
		if kubetypes.IsSidecar(&pod.Spec.InitContainers[i]) {
			add(&pod.Spec.InitContainers[i], true)
		}
	}
	return errors.Join(errs...)
}

// RemovePod stops every probe of pod and forgets its status. Results of a
// probe that is running are dropped when it returns.
func (m *Manager) RemovePod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopLocked(func(k probeKey) bool { return k.pod == pod.UID })
	delete(m.pods, pod.UID)
}

// StopLivenessAndStartup stops the liveness and startup probes of pod,
// which is terminating; readiness keeps being probed.
func (m *Manager) StopLivenessAndStartup(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopLocked(func(k probeKey) bool { return k.pod == pod.UID && k.probe != Readiness })
}

// CleanupPods stops the probes of, and forgets the statuses of, every pod
// not in desired.
func (m *Manager) CleanupPods(desired sets.Set[types.UID]) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopLocked(func(k probeKey) bool { _, ok := desired[k.pod]; return !ok })
	for uid := range m.pods {
		if _, ok := desired[uid]; !ok {
			delete(m.pods, uid)
		}
	}
}

// Probes returns how many probes are managed.
func (m *Manager) Probes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.workers)
}

func (m *Manager) stopLocked(match func(probeKey) bool) {
	for k, w := range m.workers {
		if !match(k) {
			continue
		}
		w.stopped = true
		delete(m.workers, k)
		if !w.running {
			if w.index >= 0 {
				heap.Remove(&m.queue, w.index)
			}
			m.retire(w)
		}
	}
}

// retire drops what a stopped worker leaves behind. The worker is no longer
// scheduled nor running.
func (m *Manager) retire(w *worker) {
	if w.containerID != "" {
		m.results[w.key.probe].remove(w.containerID)
	}
	m.metrics.forget(w)
}

// kickLocked wakes Run's loop if w is now the first probe due.
func (m *Manager) kickLocked(w *worker) {
	if w.index == 0 {
		m.kicked = true
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
}

// trigger makes a readiness probe run now, as upstream's manual trigger.
// Unlike upstream, its periodic slot stays where it was, so that probes
// triggered together do not stay bunched.
func (m *Manager) trigger(key probeKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.workers[key]
	if !ok {
		return
	}
	if w.running {
		w.triggered = true
		return
	}
	if w.index >= 0 {
		w.next = m.cfg.Clock.Now()
		heap.Fix(&m.queue, w.index)
		m.kickLocked(w)
	}
}

func (m *Manager) hasWorker(key probeKey) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.workers[key]
	return ok
}

func (m *Manager) podStatus(uid types.UID) *podStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pods[uid]
}

// ContainerState reports what the probes know of the running container
// of pod with the given name and runtime ID (with or without its runtime
// type), in the shape a pod syncer acts on: started (it has no startup
// probe, or that succeeded), and whether its latest liveness or startup
// result is a failure — the container is restarted then. It is
// podsyncer's Probes.ContainerState.
func (m *Manager) ContainerState(pod *v1.Pod, container, id string) (started, livenessFailed, startupFailed bool) {
	cid := containerid.ID{ID: id}
	c := containerSpec(pod.Spec.Containers, container)
	if c == nil {
		c = containerSpec(pod.Spec.InitContainers, container)
	}
	started = true
	if c != nil && c.StartupProbe != nil {
		r, ok := m.Result(Startup, cid)
		started, startupFailed = ok && r == Success, ok && r == Failure
	}
	r, ok := m.Result(Liveness, cid)
	return started, ok && r == Failure, startupFailed
}
