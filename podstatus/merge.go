package podstatus

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit/nodekit/kubetypes"
)

// OwnedByKubelet reports whether the kubelet owns (writes and may remove)
// pod conditions of type t. Every other condition belongs to someone else
// and is kept as found.
func OwnedByKubelet(t v1.PodConditionType) bool {
	switch t {
	case v1.PodScheduled, v1.PodReady, v1.PodInitialized, v1.ContainersReady, v1.PodReadyToStartContainers,
		v1.PodResizePending, v1.PodResizeInProgress, v1.AllContainersRestarting:
		return true
	}
	return false
}

// KubeletConditionTypes returns the pod condition types the kubelet owns
// (those OwnedByKubelet reports), a fresh slice each call.
func KubeletConditionTypes() []v1.PodConditionType {
	return []v1.PodConditionType{v1.PodScheduled, v1.PodReady, v1.PodInitialized, v1.ContainersReady, v1.PodReadyToStartContainers,
		v1.PodResizePending, v1.PodResizeInProgress, v1.AllContainersRestarting}
}

// IsTerminal reports whether phase is Succeeded or Failed.
func IsTerminal(phase v1.PodPhase) bool {
	return phase == v1.PodSucceeded || phase == v1.PodFailed
}

// Merge returns the status to write for pod: the kubelet's status with the
// conditions and fields others own taken from found, the status the API
// server has now. As upstream:
//   - found's conditions the kubelet does not own are kept; the kubelet's
//     own come from kubelet; DisruptionTarget from kubelet (an eviction) is
//     added only with the transition to a terminal phase, once no container
//     can run;
//   - a terminal phase is never replaced by a non-terminal one, and a
//     transition to a terminal phase waits while couldHaveRunningContainers;
//   - a terminal phase never goes with Ready or ContainersReady True: if
//     either is, both are set False (added if missing) with reason
//     PodFailed or PodCompleted;
//   - reason and message found stay while the phase does not change and the
//     kubelet sets none;
//   - resource claim statuses and nominatedNodeName are not the kubelet's.
//
// now (to the second) stamps the conditions that change here, unless the
// kubelet's status or found has them so already: the Ready conditions a
// terminal phase turns False, and DisruptionTarget.
func Merge(pod *v1.Pod, found, kubelet v1.PodStatus, couldHaveRunningContainers bool, now metav1.Time) v1.PodStatus {
	now, _ = toSeconds(now)
	out := *kubelet.DeepCopy()
	toTerminal := !IsTerminal(found.Phase) && IsTerminal(out.Phase)
	conds := make([]v1.PodCondition, 0, len(found.Conditions)+len(kubelet.Conditions))
	for _, c := range found.Conditions {
		if !OwnedByKubelet(c.Type) {
			conds = append(conds, c)
		}
	}
	for _, c := range out.Conditions {
		switch {
		case OwnedByKubelet(c.Type):
			conds = append(conds, c)
		case c.Type == v1.DisruptionTarget && toTerminal && !couldHaveRunningContainers:
			// Sent only now: its time is when the API server learns it.
			c.LastTransitionTime = now
			if f := FindCondition(found.Conditions, c.Type); f != nil && f.Status == c.Status {
				c.LastTransitionTime = f.LastTransitionTime
			}
			conds = ReplaceCondition(conds, c)
		}
	}
	out.Conditions = conds
	out.ResourceClaimStatuses = found.ResourceClaimStatuses
	out.ExtendedResourceClaimStatus = found.ExtendedResourceClaimStatus
	out.NodeAllocatableResourceClaimStatuses = found.NodeAllocatableResourceClaimStatuses
	out.NominatedNodeName = found.NominatedNodeName
	switch {
	case IsTerminal(found.Phase) && !IsTerminal(out.Phase):
		out.Phase, out.Reason, out.Message = found.Phase, found.Reason, found.Message
	case toTerminal && couldHaveRunningContainers:
		out.Phase, out.Reason, out.Message = found.Phase, found.Reason, found.Message
	}
	if out.Phase == found.Phase && out.Reason == "" && out.Message == "" {
		out.Reason, out.Message = found.Reason, found.Message
	}
	if IsTerminal(out.Phase) && (isTrue(out.Conditions, v1.PodReady) || isTrue(out.Conditions, v1.ContainersReady)) {
		reason := "PodFailed"
		if out.Phase == v1.PodSucceeded {
			reason = "PodCompleted"
		}
		for _, t := range []v1.PodConditionType{v1.ContainersReady, v1.PodReady} {
			c := v1.PodCondition{Type: t, Status: v1.ConditionFalse, Reason: reason, ObservedGeneration: pod.Generation, LastTransitionTime: now}
			for _, before := range [][]v1.PodCondition{out.Conditions, found.Conditions} {
				if old := FindCondition(before, t); old != nil && old.Status == c.Status {
					c.LastTransitionTime = old.LastTransitionTime
					break
				}
			}
			out.Conditions = ReplaceCondition(out.Conditions, c)
		}
	}
	return out
}

// isTrue reports whether cs has a condition of type t with status True.
func isTrue(cs []v1.PodCondition, t v1.PodConditionType) bool {
	c := FindCondition(cs, t)
	return c != nil && c.Status == v1.ConditionTrue
}

// ReplaceCondition replaces the condition of c's type in cs, or appends c.
func ReplaceCondition(cs []v1.PodCondition, c v1.PodCondition) []v1.PodCondition {
	for i := range cs {
		if cs[i].Type == c.Type {
			cs[i] = c
			return cs
		}
	}
	return append(cs, c)
}

// ReadyConditions computes the ContainersReady and Ready conditions of pod
// from status s as the kubelet does: every app container and every sidecar
// (restartable init container) ready; never in a terminal phase (reasons
// PodCompleted, PodFailed); Ready also needs every readiness gate's
// condition True on the pod, with upstream's messages. Transition times and
// observedGeneration are left to the caller.
func ReadyConditions(pod *v1.Pod, s *v1.PodStatus) (containersReady, ready v1.PodCondition) {
	var unready, unknown []string
	check := func(c *v1.Container, statuses []v1.ContainerStatus) {
		for i := range statuses {
			if statuses[i].Name == c.Name {
				if !statuses[i].Ready {
					unready = append(unready, c.Name)
				}
				return
			}
		}
		unknown = append(unknown, c.Name)
	}
	for i := range pod.Spec.InitContainers {
		if kubetypes.IsSidecar(&pod.Spec.InitContainers[i]) {
			check(&pod.Spec.InitContainers[i], s.InitContainerStatuses)
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i], s.ContainerStatuses)
	}
	containersReady = v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionTrue}
	switch {
	case s.Phase == v1.PodSucceeded && len(unknown) == 0:
		containersReady.Status, containersReady.Reason = v1.ConditionFalse, "PodCompleted"
	case s.Phase == v1.PodFailed:
		containersReady.Status, containersReady.Reason = v1.ConditionFalse, "PodFailed"
	case len(unready) > 0 || len(unknown) > 0:
		var msg []string
		if len(unknown) > 0 {
			msg = append(msg, fmt.Sprintf("containers with unknown status: %v", unknown))
		}
		if len(unready) > 0 {
			msg = append(msg, fmt.Sprintf("containers with unready status: %v", unready))
		}
		containersReady.Status, containersReady.Reason = v1.ConditionFalse, "ContainersNotReady"
		containersReady.Message = strings.Join(msg, ", ")
	}
	ready = containersReady
	ready.Type = v1.PodReady
	if containersReady.Status != v1.ConditionTrue {
		return containersReady, ready
	}
	var gates []string
	for _, g := range pod.Spec.ReadinessGates {
		c := FindCondition(pod.Status.Conditions, g.ConditionType)
		switch {
		case c == nil:
			gates = append(gates, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(g.ConditionType)))
		case c.Status != v1.ConditionTrue:
			gates = append(gates, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(g.ConditionType), c.Status))
		}
	}
	if len(gates) > 0 {
		ready.Status, ready.Reason, ready.Message = v1.ConditionFalse, "ReadinessGatesNotReady", strings.Join(gates, ", ")
	}
	return containersReady, ready
}

// FindCondition returns the condition of type t in cs (a pointer into cs),
// or nil.
func FindCondition(cs []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}
