package allocation

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/kubetypes"
)

// ErrInvalidConfig wraps every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("allocation: invalid config")

// Reasons of the PodResizePending condition.
const (
	ReasonDeferred   = v1.PodReasonDeferred
	ReasonInfeasible = v1.PodReasonInfeasible
	// ReasonError is the PodResizeInProgress reason after a failed
	// actuation.
	ReasonError = v1.PodReasonError
)

// Config configures a Manager.
type Config struct {
	// Admit decides whether pod, with the resources its spec asks for,
	// fits beside others (their allocated resources). Required.
	Admit func(ctx context.Context, pod *v1.Pod, others []*v1.Pod) kubetypes.AdmitResult
	// Allocatable is the node's allocatable; a pod asking for more than
	// all of it is Infeasible rather than Deferred. nil: never Infeasible.
	Allocatable func() v1.ResourceList
}

// Manager tracks allocations. It is safe for concurrent use.
type Manager struct {
	cfg Config
	mu  sync.Mutex
	pod map[types.UID]*entry
	seq uint64 // the last pendingSeq given
}

type entry struct {
	allocated map[string]v1.ResourceRequirements // by container name
	actuated  map[string]v1.ResourceRequirements // by runtime container ID
	// The pod-level resources (spec.resources) allocated, and those the
	// pod cgroup was last set to; nil: none.
	podAllocated, podActuated *v1.ResourceRequirements
	podActuatedKnown          bool
	pending                   *v1.PodCondition
	// pendingSeq orders pending resizes by when they became pending.
	pendingSeq uint64
	// A resize allocated and not yet actuated, since generation; a failed
	// actuation leaves its error.
	inProgress     bool
	generation     int64
	errMsg         string
	lastPendingGen int64
	lastPendingKey string
}

// New returns a Manager.
func New(cfg Config) (*Manager, error) {
	if cfg.Admit == nil {
		return nil, fmt.Errorf("%w: Admit is required", ErrInvalidConfig)
	}
	return &Manager{cfg: cfg, pod: map[types.UID]*entry{}}, nil
}

// containers are the pod's containers whose resources are allocated:
// init and app containers.
func containers(pod *v1.Pod) []*v1.Container {
	out := make([]*v1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// entryFor returns the pod's entry, allocating its spec on first sight
// (the pod was admitted with it). Callers hold mu.
func (m *Manager) entryFor(pod *v1.Pod) *entry {
	e := m.pod[pod.UID]
	if e == nil {
		e = &entry{allocated: map[string]v1.ResourceRequirements{}, actuated: map[string]v1.ResourceRequirements{}}
		for _, c := range containers(pod) {
			e.allocated[c.Name] = *c.Resources.DeepCopy()
		}
		e.podAllocated = pod.Spec.Resources.DeepCopy()
		m.pod[pod.UID] = e
	}
	return e
}

// differs reports whether pod's spec asks for other resources than e
// holds.
func (e *entry) differs(pod *v1.Pod) bool {
	if !samePodLevel(e.podAllocated, pod.Spec.Resources) {
		return true
	}
	for _, c := range containers(pod) {
		a, ok := e.allocated[c.Name]
		if !ok || !apiequality.Semantic.DeepEqual(a, c.Resources) {
			return true
		}
	}
	return false
}

// Allocated returns pod with every container's resources replaced by its
// allocation: pod itself when they agree, else a copy.
func (m *Manager) Allocated(pod *v1.Pod) *v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.allocatedLocked(pod)
}

func (m *Manager) allocatedLocked(pod *v1.Pod) *v1.Pod {
	e := m.entryFor(pod)
	if !e.differs(pod) {
		return pod
	}
	out := pod.DeepCopy()
	for _, c := range containers(out) {
		if a, ok := e.allocated[c.Name]; ok {
			c.Resources = *a.DeepCopy()
		}
	}
	out.Spec.Resources = e.podAllocated.DeepCopy()
	return out
}

// samePodLevel compares two pod-level resources; nil and empty agree.
func samePodLevel(a, b *v1.ResourceRequirements) bool {
	if a == nil {
		a = &v1.ResourceRequirements{}
	}
	if b == nil {
		b = &v1.ResourceRequirements{}
	}
	// Semantic equality takes a nil and an empty list as equal.
	return apiequality.Semantic.DeepEqual(a.Requests, b.Requests) && apiequality.Semantic.DeepEqual(a.Limits, b.Limits)
}

// Resize allocates the resources pod's spec asks for when they differ from
// its allocation and fit beside others (the active pods, as their specs
// say: their allocations are substituted here; called only when needed). It reports whether a
// resize started. A resize that does not fit leaves a PodResizePending
// condition (Infeasible when the pod alone exceeds the node's allocatable,
// else Deferred) and newPending is true the first time it is seen for
// this generation and reason (for an event).
//
// Pending resizes are served in the kubelet's order: before pod's resize
// is tried, every deferred resize of another active pod that ranks ahead
// of it (one that does not increase requests, then a higher priority,
// then Guaranteed QoS, then the one pending longer) is tried first, so
// that resources a deleted pod frees go to the resize that ranks first
// rather than to the pod that happens to sync first. Such a resize is
// allocated here; its pod actuates it at its next sync.
func (m *Manager) Resize(ctx context.Context, pod *v1.Pod, others func() []*v1.Pod) (started, newPending bool) {
	m.mu.Lock()
	e := m.entryFor(pod)
	if !e.differs(pod) {
		e.pending, e.pendingSeq = nil, 0
		m.mu.Unlock()
		return false, false
	}
	m.mu.Unlock()
	var active []*v1.Pod
	if others != nil {
		active = others()
	}
	for _, q := range m.pendingAhead(pod, active) {
		m.tryResize(ctx, q, m.entryOf(q), active)
	}
	return m.tryResize(ctx, pod, e, active)
}

// entryOf is entryFor under mu.
func (m *Manager) entryOf(pod *v1.Pod) *entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.entryFor(pod)
}

// pendingAhead are the active pods other than pod whose resize is deferred
// and ranks ahead of pod's, in rank order.
func (m *Manager) pendingAhead(pod *v1.Pod, active []*v1.Pod) []*v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ahead []*v1.Pod
	for _, o := range active {
		q := m.pod[o.UID]
		if o.UID == pod.UID || q == nil || q.pending == nil || q.pending.Reason != ReasonDeferred || !q.differs(o) {
			continue
		}
		if m.rankLocked(o, pod) < 0 {
			ahead = append(ahead, o)
		}
	}
	slices.SortStableFunc(ahead, m.rankLocked)
	return ahead
}

// rankLocked orders two pods wanting a resize as the kubelet's pending
// resize queue: a resize that does not increase requests first, then the
// higher priority, then Guaranteed (as the API server recorded the QoS
// class) before the others, then the one pending longer (a pod not
// pending yet last). Callers hold mu.
func (m *Manager) rankLocked(a, b *v1.Pod) int {
	if ia, ib := m.increasesRequestsLocked(a), m.increasesRequestsLocked(b); ia != ib {
		if !ia {
			return -1
		}
		return 1
	}
	if pa, pb := ptr.Deref(a.Spec.Priority, 0), ptr.Deref(b.Spec.Priority, 0); pa != pb {
		return cmp.Compare(pb, pa)
	}
	if ga, gb := a.Status.QOSClass == v1.PodQOSGuaranteed, b.Status.QOSClass == v1.PodQOSGuaranteed; ga != gb {
		if ga {
			return -1
		}
		return 1
	}
	seq := func(p *v1.Pod) uint64 {
		if e := m.pod[p.UID]; e != nil && e.pendingSeq != 0 {
			return e.pendingSeq
		}
		return math.MaxUint64
	}
	return cmp.Compare(seq(a), seq(b))
}

// increasesRequestsLocked: pod's spec asks for more CPU or memory than
// its allocation. Callers hold mu.
func (m *Manager) increasesRequestsLocked(pod *v1.Pod) bool {
	want := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	have := resourcehelper.PodRequests(m.allocatedLocked(pod), resourcehelper.PodResourcesOptions{})
	return want.Cpu().Cmp(*have.Cpu()) > 0 || want.Memory().Cmp(*have.Memory()) > 0
}

// tryResize admits pod's resize beside the allocations of the other
// active pods and allocates it, or leaves it pending.
func (m *Manager) tryResize(ctx context.Context, pod *v1.Pod, e *entry, active []*v1.Pod) (started, newPending bool) {
	m.mu.Lock()
	allocatedOthers := make([]*v1.Pod, 0, len(active))
	for _, o := range active {
		if o.UID != pod.UID {
			allocatedOthers = append(allocatedOthers, m.allocatedLocked(o))
		}
	}
	m.mu.Unlock()

	reason, msg := "", ""
	if r, n, want, capacity := m.exceedsNode(pod); r {
		reason, msg = ReasonInfeasible, fmt.Sprintf("Node didn't have enough capacity: %s, requested: %d, capacity: %d", n, want, capacity)
	} else if v := m.cfg.Admit(ctx, pod, allocatedOthers); !v.Admit {
		reason, msg = ReasonDeferred, v.Message
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if reason != "" {
		e.pending = &v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: pod.Generation}
		if e.pendingSeq == 0 {
			m.seq++
			e.pendingSeq = m.seq
		}
		key := reason + "/" + msg
		newPending = e.lastPendingGen != pod.Generation || e.lastPendingKey != key
		e.lastPendingGen, e.lastPendingKey = pod.Generation, key
		return false, newPending
	}
	for _, c := range containers(pod) {
		e.allocated[c.Name] = *c.Resources.DeepCopy()
	}
	e.podAllocated = pod.Spec.Resources.DeepCopy()
	e.pending, e.pendingSeq, e.inProgress, e.generation, e.errMsg = nil, 0, true, pod.Generation, ""
	return true, false
}

// exceedsNode reports the first of cpu and memory the pod requests more
// of than the node has allocatable at all (milli-CPU, bytes).
func (m *Manager) exceedsNode(pod *v1.Pod) (bool, v1.ResourceName, int64, int64) {
	if m.cfg.Allocatable == nil {
		return false, "", 0, 0
	}
	alloc := m.cfg.Allocatable()
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	if c, ok := alloc[v1.ResourceCPU]; ok && reqs.Cpu().MilliValue() > c.MilliValue() {
		return true, v1.ResourceCPU, reqs.Cpu().MilliValue(), c.MilliValue()
	}
	if c, ok := alloc[v1.ResourceMemory]; ok && reqs.Memory().Value() > c.Value() {
		return true, v1.ResourceMemory, reqs.Memory().Value(), c.Value()
	}
	return false, "", 0, 0
}

// Actuated returns the resources applied to the pod's container id, as
// recorded by SetActuated.
func (m *Manager) Actuated(uid types.UID, id string) (v1.ResourceRequirements, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.pod[uid]
	if e == nil {
		return v1.ResourceRequirements{}, false
	}
	r, ok := e.actuated[id]
	return r, ok
}

// SetActuated records that container id of the pod runs with r.
func (m *Manager) SetActuated(uid types.UID, id string, r v1.ResourceRequirements) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.pod[uid]; e != nil {
		e.actuated[id] = *r.DeepCopy()
	}
}

// PodActuated returns the pod-level resources the pod cgroup was last set
// to, as recorded by SetPodActuated (nil: none), and whether any were
// recorded.
func (m *Manager) PodActuated(uid types.UID) (*v1.ResourceRequirements, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.pod[uid]
	if e == nil || !e.podActuatedKnown {
		return nil, false
	}
	return e.podActuated.DeepCopy(), true
}

// SetPodActuated records that the pod cgroup runs with the pod-level
// resources r (nil: the pod has none).
func (m *Manager) SetPodActuated(uid types.UID, r *v1.ResourceRequirements) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.pod[uid]; e != nil {
		e.podActuated, e.podActuatedKnown = r.DeepCopy(), true
	}
}

// Actuation ends an actuation pass: err nil means every running container
// has its allocation, and completed reports whether a resize in progress
// just finished (for an event). A non-nil err stays in the
// PodResizeInProgress condition until the next pass.
func (m *Manager) Actuation(uid types.UID, err error) (completed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.pod[uid]
	if e == nil {
		return false
	}
	if err != nil {
		e.inProgress, e.errMsg = true, err.Error()
		return false
	}
	completed = e.inProgress
	e.inProgress, e.errMsg = false, ""
	return completed
}

// Conditions are the pod's resize conditions now: PodResizePending while
// a resize does not fit, PodResizeInProgress while one is actuated (with
// reason Error after a failure).
func (m *Manager) Conditions(uid types.UID) []v1.PodCondition {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.pod[uid]
	if e == nil {
		return nil
	}
	var out []v1.PodCondition
	if e.pending != nil {
		out = append(out, *e.pending)
	}
	if e.inProgress {
		c := v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, ObservedGeneration: e.generation}
		if e.errMsg != "" {
			c.Reason, c.Message = ReasonError, e.errMsg
		}
		out = append(out, c)
	}
	return out
}

// Forget drops a pod that is gone.
func (m *Manager) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pod, uid)
}

// Summary is a resize event's message body: the generation and each init
// and app container's allocated resources, as JSON (the kubelet's shape).
func Summary(pod *v1.Pod) string {
	type ctr struct {
		Name      string                  `json:"name"`
		Resources v1.ResourceRequirements `json:"resources,omitempty"`
	}
	s := struct {
		InitContainers []ctr `json:"initContainers,omitempty"`
		Containers     []ctr `json:"containers,omitempty"`
		Generation     int64 `json:"generation"`
	}{Generation: pod.Generation}
	for _, c := range pod.Spec.InitContainers {
		s.InitContainers = append(s.InitContainers, ctr{c.Name, c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		s.Containers = append(s.Containers, ctr{c.Name, c.Resources})
	}
	b, _ := json.Marshal(s)
	return string(b)
}
