package podstatus

import (
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/kubetypes"
)

// Upstream's wording for a container whose end was never seen.
const (
	ReasonContainerStatusUnknown  = "ContainerStatusUnknown"
	messageContainerStatusUnknown = "The container could not be located when the pod was terminated"
)

// TerminatePod sets the final status of a pod whose containers are all
// stopped for good, as the kubelet's status manager does once a pod is
// terminated: once the pod has initialized, every app container not seen
// terminated is reported Terminated (ContainerStatusUnknown, exit code
// 137), as is every init container that tried to start; a pod that is not
// static and not yet Succeeded or Failed becomes Failed. It starts from the
// status last set (else the pod's own), and judges initialization from it
// too. The status is then set as SetPodStatus sets one.
func (m *Manager) TerminatePod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	base := &pod.Status
	if e := m.entries[pod.UID]; e != nil && e.version > 0 {
		base = &e.status
	}
	status := *base.DeepCopy()
	unknown := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		Reason: ReasonContainerStatusUnknown, Message: messageContainerStatusUnknown, ExitCode: 137}}
	if initialized(pod, &status) {
		for i := range status.ContainerStatuses {
			if status.ContainerStatuses[i].State.Terminated == nil {
				status.ContainerStatuses[i].State = unknown
			}
		}
	}
	inits := status.InitContainerStatuses
	for i := range triedToStart(inits) {
		if inits[i].State.Terminated == nil {
			inits[i].State = unknown
		}
	}
	if !kubetypes.IsStatic(pod) && !IsTerminal(status.Phase) {
		status.Phase = v1.PodFailed
	}
	m.setLocked(pod, status)
}

// initialized: the pod has no init containers, an app container left
// waiting once, or its last init container completed (or, a sidecar,
// started).
func initialized(pod *v1.Pod, s *v1.PodStatus) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for _, cs := range s.ContainerStatuses {
		if cs.LastTerminationState.Terminated != nil || cs.State.Waiting == nil {
			return true
		}
	}
	n := len(s.InitContainerStatuses)
	if n == 0 || n != len(pod.Spec.InitContainers) {
		return false
	}
	last := s.InitContainerStatuses[n-1]
	if kubetypes.IsSidecar(&pod.Spec.InitContainers[n-1]) {
		return last.State.Running != nil && last.Started != nil && *last.Started
	}
	for _, st := range []v1.ContainerState{last.LastTerminationState, last.State} {
		if st.Terminated != nil && st.Terminated.ExitCode == 0 {
			return true
		}
	}
	return false
}

// triedToStart is the init containers up to the last one that left
// waiting once (at least the first).
func triedToStart(inits []v1.ContainerStatus) []v1.ContainerStatus {
	for i := len(inits) - 1; i >= 0; i-- {
		if inits[i].State.Waiting == nil || inits[i].LastTerminationState.Terminated != nil {
			return inits[:i+1]
		}
	}
	if len(inits) > 0 {
		return inits[:1]
	}
	return nil
}
