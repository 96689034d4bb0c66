package podmanager

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/kubetypes"
)

// Manager holds the pods. It is safe for concurrent use; the pods it
// returns are shared and must not be modified.
type Manager struct {
	mu       sync.Mutex
	byUID    map[types.UID]*v1.Pod
	mirrors  map[string]*v1.Pod // by full name
	rejected map[types.UID]bool
}

// New returns an empty Manager.
func New() *Manager {
	return &Manager{byUID: map[types.UID]*v1.Pod{}, mirrors: map[string]*v1.Pod{}, rejected: map[types.UID]bool{}}
}

// Set records pod (added or updated).
func (m *Manager) Set(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byUID[pod.UID] = pod
}

// Remove forgets the pod uid and its rejection.
func (m *Manager) Remove(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byUID, uid)
	delete(m.rejected, uid)
}

// Get returns the pod uid.
func (m *Manager) Get(uid types.UID) (*v1.Pod, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.byUID[uid]
	return p, ok
}

// GetByName returns the pod namespace/name; of two with that name (one
// being deleted and its replacement), the newer.
func (m *Manager) GetByName(namespace, name string) (*v1.Pod, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var found *v1.Pod
	for _, p := range m.byUID {
		if p.Namespace == namespace && p.Name == name && (found == nil || found.CreationTimestamp.Before(&p.CreationTimestamp)) {
			found = p
		}
	}
	return found, found != nil
}

// Pods returns every pod, rejected ones included.
func (m *Manager) Pods() []*v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*v1.Pod, 0, len(m.byUID))
	for _, p := range m.byUID {
		out = append(out, p)
	}
	return out
}

// Reject marks the pod uid as refused by admission: it is never started
// and not desired.
func (m *Manager) Reject(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rejected[uid] = true
}

// Rejected reports whether admission refused the pod uid.
func (m *Manager) Rejected(uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rejected[uid]
}

// Desired returns the UIDs of the pods that should run: every pod not
// rejected.
func (m *Manager) Desired() []types.UID {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]types.UID, 0, len(m.byUID))
	for uid := range m.byUID {
		if !m.rejected[uid] {
			out = append(out, uid)
		}
	}
	return out
}

// Active returns the pods that may still hold resources, as the kubelet's
// GetActivePods: not rejected, not in a terminal phase, and not known
// terminated by terminated (which may be nil).
func (m *Manager) Active(terminated func(types.UID) bool) []*v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*v1.Pod, 0, len(m.byUID))
	for uid, p := range m.byUID {
		if m.rejected[uid] || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed ||
			(terminated != nil && terminated(uid)) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// SetMirror records the mirror pod of a static pod.
func (m *Manager) SetMirror(mirror *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mirrors[kubetypes.FullName(mirror)] = mirror
}

// RemoveMirror forgets a mirror pod, unless another mirror (another UID)
// has replaced it under its full name.
func (m *Manager) RemoveMirror(mirror *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name := kubetypes.FullName(mirror)
	if cur, ok := m.mirrors[name]; ok && (mirror.UID == "" || cur.UID == mirror.UID) {
		delete(m.mirrors, name)
	}
}

// OrphanedMirrors returns the mirror pods whose static pod the manager
// does not hold (its manifest was removed): the kubelet deletes them.
func (m *Manager) OrphanedMirrors() []*v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	static := make(map[string]bool, len(m.mirrors))
	for _, p := range m.byUID {
		if kubetypes.IsStatic(p) {
			static[kubetypes.FullName(p)] = true
		}
	}
	var out []*v1.Pod
	for name, mirror := range m.mirrors {
		if !static[name] {
			out = append(out, mirror)
		}
	}
	return out
}

// MirrorCount returns how many mirror pods are recorded (the kubelet's
// kubelet_mirror_pods).
func (m *Manager) MirrorCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.mirrors)
}

// MirrorOf returns the mirror pod recorded for pod's full name, nil
// without one.
func (m *Manager) MirrorOf(pod *v1.Pod) *v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mirrors[kubetypes.FullName(pod)]
}
