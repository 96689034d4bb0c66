// Package podstatustest is a fake of the pod status manager for tests of
// the blocks that hand it statuses: it keeps the last status set per pod
// and records every call, and writes nothing anywhere. It implements
// podsyncer.StatusManager and podhandler.Statuses (checked at compile time
// in those packages' tests, since this package imports neither).
package podstatustest

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Manager is a fake status manager, safe for concurrent use. The zero
// value is ready.
type Manager struct {
	mu       sync.Mutex
	statuses map[types.UID]v1.PodStatus
	calls    []string
}

// PodStatus is the status last set for the pod.
func (m *Manager) PodStatus(uid types.UID) (v1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.statuses[uid]
	return *st.DeepCopy(), ok
}

// SetPodStatus keeps a copy of status as the pod's.
func (m *Manager) SetPodStatus(pod *v1.Pod, status v1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.statuses == nil {
		m.statuses = map[types.UID]v1.PodStatus{}
	}
	m.statuses[pod.UID] = *status.DeepCopy()
	m.calls = append(m.calls, fmt.Sprintf("SetPodStatus %s %s", pod.UID, status.Phase))
}

// TerminatePod records the call; the status is left as it was (the real
// manager's terminal status is podstatus' own, tested there).
func (m *Manager) TerminatePod(pod *v1.Pod) { m.record("TerminatePod", pod.UID) }

// Finish records the call.
func (m *Manager) Finish(pod *v1.Pod) { m.record("Finish", pod.UID) }

// RemoveOrphans forgets the statuses of pods keep does not want.
func (m *Manager) RemoveOrphans(keep func(types.UID) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid := range m.statuses {
		if !keep(uid) {
			delete(m.statuses, uid)
			m.calls = append(m.calls, "RemoveOrphans "+string(uid))
		}
	}
}

// Calls are the calls so far, one line each: "SetPodStatus <uid>
// <phase>", "TerminatePod <uid>", "Finish <uid>", "RemoveOrphans <uid>"
// (one per status forgotten).
func (m *Manager) Calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.calls...)
}

func (m *Manager) record(method string, uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, method+" "+string(uid))
}
