package podstatus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/kubeclient"
	"github.com/nodekit/nodekit/kubetypes"
)

// ErrInvalidConfig wraps every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("podstatus: invalid config")

// Defaults of Config's zero fields.
const (
	// DefaultWorkers is how many pods' statuses are written at once.
	DefaultWorkers = 4
	// DefaultResyncPeriod is how often statuses not yet written are
	// queued again (the kubelet's status sync period).
	DefaultResyncPeriod = 10 * time.Second
	// DefaultRetryBase and DefaultRetryMax bound the per-pod backoff
	// after a failed write.
	DefaultRetryBase = 200 * time.Millisecond
	DefaultRetryMax  = 10 * time.Second
)

// Config configures a Manager. Zero fields take the defaults above.
type Config struct {
	// Client writes statuses (kubeclient.NewForConfig, or a client-go
	// clientset through kubeclient/clientset.Wrap); nil keeps them only in
	// the cache (a standalone agent).
	Client kubeclient.PodsGetter
	// Clock drives the resync and the retry backoff. Default: real.
	Clock clock.WithTicker
	// CouldHaveRunningContainers tells whether the pod may still have
	// running containers (the pod workers' answer); a terminal phase and
	// the deletion wait until it is false. Default: never.
	CouldHaveRunningContainers func(types.UID) bool
	// Workers bounds concurrent writes.
	Workers int
	// ResyncPeriod, RetryBase and RetryMax: see the defaults.
	ResyncPeriod, RetryBase, RetryMax time.Duration
	// Registerer, if set, receives the kubelet's
	// kubelet_terminated_containers_total{container_type, exit_code,
	// reason}: each container counted once as its status turns terminated.
	Registerer prometheus.Registerer
	// Observer, if set, is told of each status patch the API server
	// accepted and of each pod whose status the Manager forgets;
	// podstartup.Tracker is one (the pod startup SLI). It must not block.
	Observer Observer
}

// Observer is what Config.Observer is told.
type Observer interface {
	// StatusWritten is called with the pod the API server returned after
	// a status patch.
	StatusWritten(pod *v1.Pod)
	// Forget is called when the Manager drops a pod's status: the pod is
	// gone, or its deletion was finished.
	Forget(uid types.UID)
}

// Manager caches the latest status of every pod and writes it to the API
// server. Its methods are safe for concurrent use; the setters never block
// on the API server.
type Manager struct {
	cfg        Config
	terminated *prometheus.CounterVec // nil without Registerer
	syncTime   prometheus.Histogram   // nil without Registerer

	mu      sync.Mutex
	entries map[types.UID]*entry
	queue   workqueue.TypedRateLimitingInterface[types.UID] // nil until Run
}

type entry struct {
	pod    *v1.Pod
	status v1.PodStatus
	// encoded is status in its protobuf encoding (nil if it failed):
	// equal statuses encode equally, so most SetPodStatus calls compare
	// bytes rather than reflect over the status.
	encoded []byte
	// version counts changes to status; written is the version last
	// written in full (0: none).
	version, written uint64
	// changed is when version last changed (the status sync duration's
	// start).
	changed time.Time
	// finish: delete the pod (zero grace) once its final status is
	// written and no container can run.
	finish bool
}

// New validates cfg and returns a Manager.
func New(cfg Config) (*Manager, error) {
	var errs []error
	if cfg.Workers < 0 {
		errs = append(errs, fmt.Errorf("workers must not be negative, got %d", cfg.Workers))
	}
	for name, d := range map[string]time.Duration{"ResyncPeriod": cfg.ResyncPeriod, "RetryBase": cfg.RetryBase, "RetryMax": cfg.RetryMax} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %v", name, d))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	m := &Manager{}
	if cfg.Registerer != nil {
		m.terminated = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_terminated_containers_total", Help: "[ALPHA] Cumulative number of container terminations.",
		}, []string{"container_type", "exit_code", "reason"})
		m.syncTime = prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubelet_pod_status_sync_duration_seconds",
			Help:    "[ALPHA] Duration in seconds to sync a pod status update. Measures time from detection of a change to pod status until the API is successfully updated for that pod, even if multiple intevening changes to pod status occur.",
			Buckets: []float64{0.010, 0.050, 0.100, 0.500, 1, 5, 10, 20, 30, 45, 60},
		})
		for _, c := range []prometheus.Collector{m.terminated, m.syncTime} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("%w: metrics: %w", ErrInvalidConfig, err)
			}
		}
	}
	if cfg.CouldHaveRunningContainers == nil {
		cfg.CouldHaveRunningContainers = func(types.UID) bool { return false }
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.ResyncPeriod == 0 {
		cfg.ResyncPeriod = DefaultResyncPeriod
	}
	if cfg.RetryBase == 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	if cfg.RetryMax == 0 {
		cfg.RetryMax = DefaultRetryMax
	}
	if cfg.RetryMax < cfg.RetryBase {
		return nil, fmt.Errorf("%w: RetryMax %v is below RetryBase %v", ErrInvalidConfig, cfg.RetryMax, cfg.RetryBase)
	}
	m.cfg, m.entries = cfg, map[types.UID]*entry{}
	return m, nil
}

// PodStatus returns the latest status cached for the pod.
func (m *Manager) PodStatus(uid types.UID) (v1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.entries[uid]; e != nil && e.version > 0 {
		return *e.status.DeepCopy(), true
	}
	return v1.PodStatus{}, false
}

// Pods returns a copy of every cached pod with its latest status.
func (m *Manager) Pods() []v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]v1.Pod, 0, len(m.entries))
	for _, e := range m.entries {
		p := e.pod.DeepCopy()
		p.Status = *e.status.DeepCopy()
		out = append(out, *p)
	}
	return out
}

// Finish asks for the deletion of pod to be completed: once its latest
// status is written and no container can run, the pod is deleted with zero
// grace (UID precondition) and forgotten. It does nothing for a pod not
// being deleted or a static pod (whose mirror the agent manages).
func (m *Manager) Finish(pod *v1.Pod) {
	if pod.DeletionTimestamp == nil || kubetypes.IsStatic(pod) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[pod.UID]
	if e == nil {
		e = &entry{pod: pod, status: pod.Status, version: 1}
		m.entries[pod.UID] = e
	}
	e.pod, e.finish = pod, true
	m.enqueueLocked(pod.UID)
}

// RemoveOrphans forgets the statuses of pods keep refuses (pods no longer
// known to the agent: gone from their source), except those whose deletion
// is still to be finished.
func (m *Manager) RemoveOrphans(keep func(types.UID) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid, e := range m.entries {
		if !e.finish && !keep(uid) {
			m.dropLocked(uid)
		}
	}
}

// Pending returns how many pods have a status not yet written.
func (m *Manager) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.entries {
		if e.written != e.version || e.finish {
			n++
		}
	}
	return n
}

func (m *Manager) enqueueLocked(uid types.UID) {
	if m.queue != nil {
		m.queue.Add(uid)
	}
}

// Run writes queued statuses until ctx ends: Workers at a time, a failed
// write retried with a per-pod backoff, every ResyncPeriod the statuses not
// yet written queued again.
func (m *Manager) Run(ctx context.Context) error {
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](m.cfg.RetryBase, m.cfg.RetryMax),
		workqueue.TypedRateLimitingQueueConfig[types.UID]{Clock: m.cfg.Clock})
	m.mu.Lock()
	if m.queue != nil {
		m.mu.Unlock()
		q.ShutDown()
		return errors.New("status: Run called twice")
	}
	m.queue = q
	m.mu.Unlock()
	m.requeue()
	var wg sync.WaitGroup
	for i := 0; i < m.cfg.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m.processNext(ctx, q) {
			}
		}()
	}
	t := m.cfg.Clock.NewTicker(m.cfg.ResyncPeriod)
	defer t.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-t.C():
			m.requeue()
		}
	}
	q.ShutDown()
	wg.Wait()
	m.mu.Lock()
	m.queue = nil
	m.mu.Unlock()
	return nil
}

// requeue queues every pod whose status is not written yet.
func (m *Manager) requeue() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid, e := range m.entries {
		if e.written != e.version || e.finish {
			m.enqueueLocked(uid)
		}
	}
}

func (m *Manager) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[types.UID]) bool {
	uid, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(uid)
	if err := m.Sync(ctx, uid); err != nil {
		klog.FromContext(ctx).V(2).Info("Pod status write failed, will retry", "podUID", uid, "err", err)
		q.AddRateLimited(uid)
		return true
	}
	q.Forget(uid)
	return true
}

// Sync writes the pod's latest status now (one pass of a worker): it reads
// the pod from the API server, merges, patches if anything changed, and
// completes a requested deletion. An error means the write should be
// retried.
func (m *Manager) Sync(ctx context.Context, uid types.UID) error {
	m.mu.Lock()
	e := m.entries[uid]
	if e == nil {
		m.mu.Unlock()
		return nil
	}
	pod, status, version, finish, changed := e.pod, *e.status.DeepCopy(), e.version, e.finish, e.changed
	m.mu.Unlock()
	if m.cfg.Client == nil {
		m.markWritten(uid, version, finish)
		return nil
	}
	pods := m.cfg.Client.Pods(pod.Namespace)
	found, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if !kubetypes.IsStatic(pod) {
			m.forget(uid) // gone: nothing left to report
		}
		return nil // a static pod's mirror does not exist yet: the resync retries
	case apierrors.IsForbidden(err) && finish:
		// The node authorizer answers so for a pod no longer bound to
		// this node: a deleted pod whose deletion completed.
		m.forget(uid)
		return nil
	case err != nil:
		return fmt.Errorf("get pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if kubetypes.IsStatic(pod) {
		if !kubetypes.IsMirrorOf(found, pod) {
			return nil // not this static pod's mirror (yet): the resync retries
		}
	} else if found.UID != pod.UID {
		m.forget(uid) // deleted and recreated under the same name
		return nil
	}
	couldRun := m.cfg.CouldHaveRunningContainers(uid)
	merged := Merge(pod, found.Status, status, couldRun, metav1.NewTime(m.cfg.Clock.Now()))
	if !equality.Semantic.DeepEqual(found.Status, merged) {
		patched, err := patchStatus(ctx, m.cfg.Client, found, merged)
		if err != nil {
			if apierrors.IsNotFound(err) && !kubetypes.IsStatic(pod) {
				m.forget(uid)
				return nil
			}
			return err
		}
		if m.cfg.Observer != nil {
			m.cfg.Observer.StatusWritten(patched)
		}
	}
	if m.syncTime != nil && !changed.IsZero() {
		// From the change to the API server having it, as the kubelet
		// measures it (also when the server had it already).
		m.syncTime.Observe(m.cfg.Clock.Since(changed).Truncate(time.Millisecond).Seconds())
	}
	// A terminal phase held back is not written yet: the next status (or
	// the resync) tries again.
	complete := !(couldRun && IsTerminal(status.Phase) && !IsTerminal(found.Status.Phase))
	if complete {
		m.markWritten(uid, version, false)
	}
	if !finish || couldRun || !complete {
		return nil
	}
	grace := int64(0)
	err = pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &found.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	m.markWritten(uid, version, true)
	return nil
}

// markWritten records version as written; done forgets a finished pod
// whose status did not change meanwhile.
func (m *Manager) markWritten(uid types.UID, version uint64, done bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[uid]
	if e == nil {
		return
	}
	if e.written < version {
		e.written = version
	}
	if done && e.version == version {
		m.dropLocked(uid)
	}
}

func (m *Manager) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropLocked(uid)
}

func (m *Manager) dropLocked(uid types.UID) {
	delete(m.entries, uid)
	if m.cfg.Observer != nil {
		m.cfg.Observer.Forget(uid)
	}
}

// patchStatus sends the change from found's status to status as a strategic
// merge patch guarded by found's UID.
func patchStatus(ctx context.Context, client kubeclient.PodsGetter, found *v1.Pod, status v1.PodStatus) (*v1.Pod, error) {
	oldJSON, err := json.Marshal(v1.Pod{Status: found.Status})
	if err != nil {
		return nil, err
	}
	newJSON, err := json.Marshal(v1.Pod{Status: status})
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Pod{})
	if err != nil {
		return nil, err
	}
	var body map[string]any
	if err := json.Unmarshal(patch, &body); err != nil {
		return nil, err
	}
	body["metadata"] = map[string]any{"uid": string(found.UID)}
	if patch, err = json.Marshal(body); err != nil {
		return nil, err
	}
	patched, err := client.Pods(found.Namespace).Patch(ctx, found.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, fmt.Errorf("patch status of pod %s/%s: %w", found.Namespace, found.Name, err)
	}
	return patched, nil
}

// WithStatus returns a copy of pod carrying the latest status set for it
// (the pod's own status if none yet): what the kubelet API's /pods shows.
func (m *Manager) WithStatus(pod *v1.Pod) *v1.Pod {
	p := pod.DeepCopy()
	if s, ok := m.PodStatus(pod.UID); ok {
		p.Status = s
	}
	return p
}
