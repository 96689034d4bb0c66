package podstatus

import (
	"bytes"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// SetPodStatus caches status as pod's latest and queues its write if it
// changed. As the kubelet's status manager, it first completes status
// against the one cached (the pod's own before the first):
//   - startTime: the cached one once set, else status's, else now;
//   - the lastTransitionTime of the kubelet's conditions and
//     DisruptionTarget: the cached condition's while its status does not
//     change, else the one status carries (unless that is the cached
//     condition's own), else now;
//   - observedGeneration: status's, else the pod's generation, never below
//     the cached one;
//   - timestamps in whole seconds, container statuses by name (init
//     containers in spec order), termination messages within 12 KiB.
//
// A status equal to the cached one in what the kubelet owns (its own
// conditions by status, reason and message; every field but other
// conditions and resource claim statuses) changes nothing. A terminal phase
// already cached is never replaced by a non-terminal one (the phase, reason
// and message stay). SetPodStatus does not modify status.
func (m *Manager) SetPodStatus(pod *v1.Pod, status v1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setLocked(pod, status)
}

// setLocked is SetPodStatus with m.mu held. status is a shallow copy: what
// it shares with the caller is replaced, never changed.
func (m *Manager) setLocked(pod *v1.Pod, status v1.PodStatus) {
	e := m.entries[pod.UID]
	if e == nil {
		e = &entry{}
		m.entries[pod.UID] = e
	}
	old := &pod.Status
	if e.version > 0 {
		old = &e.status
	}
	if IsTerminal(e.status.Phase) && !IsTerminal(status.Phase) {
		status.Phase, status.Reason, status.Message = e.status.Phase, e.status.Reason, e.status.Message
	}
	m.complete(pod, &status, old)
	e.pod = pod
	encoded, _ := status.Marshal() // nil on error: compared the slow way
	if e.version > 0 && sameStatus(e.encoded, encoded, &e.status, &status) {
		if e.written != e.version {
			// Not written in full yet (a terminal phase held while a
			// container could run): the caller's news may release it.
			m.enqueueLocked(pod.UID)
		}
		return
	}
	m.countTerminations(old, &status)
	e.status = *status.DeepCopy()
	e.encoded = encoded
	e.version++
	e.changed = m.cfg.Clock.Now()
	m.enqueueLocked(pod.UID)
}

// complete fills in what the kubelet's status manager sets on every status
// (SetPodStatus lists it), old being the status before.
func (m *Manager) complete(pod *v1.Pod, s, old *v1.PodStatus) {
	now, _ := toSeconds(metav1.NewTime(m.cfg.Clock.Now()))
	stampTransitions(s, old, now)
	switch {
	case old.StartTime != nil && !old.StartTime.IsZero():
		if s.StartTime == nil || !s.StartTime.Equal(old.StartTime) {
			t := *old.StartTime
			s.StartTime = &t
		}
	case s.StartTime == nil || s.StartTime.IsZero():
		t := now
		s.StartTime = &t
	}
	if s.ObservedGeneration == 0 {
		s.ObservedGeneration = pod.Generation
	}
	s.ObservedGeneration = max(s.ObservedGeneration, old.ObservedGeneration)
	normalize(pod, s)
}

// sameStatus reports whether b, whose encoding is eb, changes nothing the
// kubelet owns from a, whose encoding is ea: equal encodings are equal
// statuses; otherwise sameByKubelet decides.
func sameStatus(ea, eb []byte, a, b *v1.PodStatus) bool {
	if ea != nil && eb != nil && bytes.Equal(ea, eb) {
		return true
	}
	return sameByKubelet(a, b)
}

// countTerminations counts each container whose status turns terminated
// from old to now, by type, exit code and reason, as the kubelet's status
// manager does.
func (m *Manager) countTerminations(old, now *v1.PodStatus) {
	if m.terminated == nil {
		return
	}
	count := func(typ string, olds, news []v1.ContainerStatus) {
		for i := range news {
			t := news[i].State.Terminated
			if t == nil {
				continue
			}
			was := false
			for j := range olds {
				if olds[j].Name == news[i].Name {
					was = olds[j].State.Terminated != nil
					break
				}
			}
			if !was {
				m.terminated.WithLabelValues(typ, strconv.Itoa(int(t.ExitCode)), t.Reason).Inc()
			}
		}
	}
	count("init_container", old.InitContainerStatuses, now.InitContainerStatuses)
	count("container", old.ContainerStatuses, now.ContainerStatuses)
	count("ephemeral_container", old.EphemeralContainerStatuses, now.EphemeralContainerStatuses)
}

// SetContainerReadiness records the prober's readiness result for the
// container with the given ID ("<runtime>://<id>") in the pod's cached
// status and recomputes its ContainersReady and Ready conditions (adding
// them if missing), without waiting for a pod sync. It does nothing before
// the pod's first status, for a container the status does not list, when
// the readiness is unchanged, and for a ready result on a container the
// status shows waiting or terminated (a result that outlived its
// container).
func (m *Manager) SetContainerReadiness(uid types.UID, containerID string, ready bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, cs := m.containerLocked(uid, containerID)
	if cs == nil || cs.Ready == ready || ready && stopped(cs) {
		return
	}
	s := e.status.DeepCopy()
	findContainer(s, containerID).Ready = ready
	containersReady, podReady := ReadyConditions(e.pod, s)
	for _, c := range []v1.PodCondition{podReady, containersReady} {
		c.ObservedGeneration = e.pod.Generation
		s.Conditions = ReplaceCondition(s.Conditions, c)
	}
	m.setLocked(e.pod, *s)
}

// SetContainerStartup records the prober's startup result for the
// container with the given ID in the pod's cached status, as
// SetContainerReadiness does (a started result on a container shown
// waiting or terminated is ignored).
func (m *Manager) SetContainerStartup(uid types.UID, containerID string, started bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, cs := m.containerLocked(uid, containerID)
	if cs == nil || cs.Started != nil && *cs.Started == started || started && stopped(cs) {
		return
	}
	s := e.status.DeepCopy()
	findContainer(s, containerID).Started = &started
	m.setLocked(e.pod, *s)
}

// containerLocked returns the pod's entry and the status of the container
// with the given ID in its cached status (a pointer into it, not to be
// changed), nil if none.
func (m *Manager) containerLocked(uid types.UID, containerID string) (*entry, *v1.ContainerStatus) {
	e := m.entries[uid]
	if e == nil || e.version == 0 || containerID == "" {
		return nil, nil
	}
	return e, findContainer(&e.status, containerID)
}

// findContainer is the app or init container status in s with the given
// ID, nil if none.
func findContainer(s *v1.PodStatus, containerID string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{s.ContainerStatuses, s.InitContainerStatuses} {
		for i := range list {
			if list[i].ContainerID == containerID {
				return &list[i]
			}
		}
	}
	return nil
}

// stopped: the status shows the container waiting or terminated.
func stopped(cs *v1.ContainerStatus) bool {
	return cs.State.Waiting != nil || cs.State.Terminated != nil
}
