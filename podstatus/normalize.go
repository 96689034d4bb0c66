package podstatus

import (
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxTerminationMessages is the kubelet's budget for the termination
// messages of one pod's status, in bytes: each container state's message is
// cut to an equal share of it.
const maxTerminationMessages = 12 << 10

// transitionTimed reports whether the Manager keeps the lastTransitionTime
// of conditions of type t, as the kubelet's status manager does.
func transitionTimed(t v1.PodConditionType) bool {
	switch t {
	case v1.ContainersReady, v1.PodReady, v1.PodInitialized, v1.PodReadyToStartContainers, v1.PodScheduled,
		v1.DisruptionTarget, v1.AllContainersRestarting:
		return true
	}
	return false
}

// transitionTime is the lastTransitionTime condition c gets when old (nil:
// none) was the condition of its type before: old's when the status did not
// change (c's if old has none); on a change c's own, unless c carries none
// or only old's, then now.
func transitionTime(c, old *v1.PodCondition, now metav1.Time) metav1.Time {
	switch {
	case old != nil && old.Status == c.Status && !old.LastTransitionTime.IsZero():
		return old.LastTransitionTime
	case old != nil && old.Status == c.Status:
		return c.LastTransitionTime
	case c.LastTransitionTime.IsZero(), old != nil && c.LastTransitionTime.Equal(&old.LastTransitionTime):
		return now
	}
	return c.LastTransitionTime
}

// stampTransitions sets the lastTransitionTime of s's conditions the
// kubelet times (transitionTime against old's). s.Conditions is replaced,
// never changed in place.
func stampTransitions(s, old *v1.PodStatus, now metav1.Time) {
	cloned := false
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if !transitionTimed(c.Type) {
			continue
		}
		want := transitionTime(c, FindCondition(old.Conditions, c.Type), now)
		if want.Equal(&c.LastTransitionTime) {
			continue
		}
		if !cloned {
			s.Conditions, cloned = slices.Clone(s.Conditions), true
		}
		s.Conditions[i].LastTransitionTime = want
	}
}

// normalize brings s to what the API server stores and the kubelet
// compares, as the kubelet's status manager does before it caches a
// status: every timestamp to whole seconds, each termination message cut
// to its share of maxTerminationMessages, container and ephemeral container
// statuses sorted by name, init container statuses in pod's spec order.
// Slices and pointers s shares with others are replaced, never changed.
func normalize(pod *v1.Pod, s *v1.PodStatus) {
	if s.StartTime != nil && s.StartTime.Nanosecond() != 0 {
		t := metav1.NewTime(s.StartTime.Truncate(time.Second))
		s.StartTime = &t
	}
	s.Conditions = normalizeConditions(s.Conditions)
	share := maxTerminationMessages
	if n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers) + len(pod.Spec.EphemeralContainers); n > 0 {
		share /= n
	}
	byName := func(a, b v1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) }
	s.ContainerStatuses = normalizeContainers(s.ContainerStatuses, share, byName)
	s.EphemeralContainerStatuses = normalizeContainers(s.EphemeralContainerStatuses, share, byName)
	s.InitContainerStatuses = normalizeContainers(s.InitContainerStatuses, share, func(a, b v1.ContainerStatus) int {
		return specIndex(pod.Spec.InitContainers, a.Name) - specIndex(pod.Spec.InitContainers, b.Name)
	})
}

// toSeconds is t truncated to whole seconds, and whether that changed it.
func toSeconds(t metav1.Time) (metav1.Time, bool) {
	if t.Nanosecond() == 0 {
		return t, false
	}
	return metav1.NewTime(t.Truncate(time.Second)), true
}

// normalizeConditions returns cs with its times in whole seconds, copied
// first if any is not.
func normalizeConditions(cs []v1.PodCondition) []v1.PodCondition {
	out, cloned := cs, false
	for i := range cs {
		probe, p := toSeconds(cs[i].LastProbeTime)
		transition, t := toSeconds(cs[i].LastTransitionTime)
		if !p && !t {
			continue
		}
		if !cloned {
			out, cloned = slices.Clone(cs), true
		}
		out[i].LastProbeTime, out[i].LastTransitionTime = probe, transition
	}
	return out
}

// normalizeContainers normalizes the states in list and sorts it by order,
// copying list first if anything changes.
func normalizeContainers(list []v1.ContainerStatus, share int, order func(a, b v1.ContainerStatus) int) []v1.ContainerStatus {
	out, cloned := list, false
	for i := range list {
		state, a := normalizeState(list[i].State, share)
		last, b := normalizeState(list[i].LastTerminationState, share)
		if !a && !b {
			continue
		}
		if !cloned {
			out, cloned = slices.Clone(list), true
		}
		out[i].State, out[i].LastTerminationState = state, last
	}
	if !slices.IsSortedFunc(out, order) {
		if !cloned {
			out = slices.Clone(list)
		}
		slices.SortStableFunc(out, order)
	}
	return out
}

// normalizeState returns st with its times in whole seconds and its
// termination message within share bytes (new pointees where they change),
// and whether anything changed.
func normalizeState(st v1.ContainerState, share int) (v1.ContainerState, bool) {
	changed := false
	if r := st.Running; r != nil {
		if t, ok := toSeconds(r.StartedAt); ok {
			st.Running = &v1.ContainerStateRunning{StartedAt: t}
			changed = true
		}
	}
	if t := st.Terminated; t != nil {
		started, a := toSeconds(t.StartedAt)
		finished, b := toSeconds(t.FinishedAt)
		long := len(t.Message) > share
		if a || b || long {
			c := *t
			c.StartedAt, c.FinishedAt = started, finished
			if long {
				c.Message = c.Message[:share]
			}
			st.Terminated, changed = &c, true
		}
	}
	return st, changed
}

// specIndex is the index of the container named name in cs, len(cs) if
// none (statuses of unknown containers go last).
func specIndex(cs []v1.Container, name string) int {
	for i := range cs {
		if cs[i].Name == name {
			return i
		}
	}
	return len(cs)
}

// sameByKubelet reports whether the normalized statuses a and b are equal
// in what the kubelet owns, as the kubelet's status manager compares a new
// status with its cached one: the kubelet's conditions and DisruptionTarget
// by type, status, reason and message (their times and observed
// generations aside), other conditions and the resource claim statuses not
// at all, every other field semantically.
func sameByKubelet(a, b *v1.PodStatus) bool {
	if !sameKubeletConditions(a.Conditions, b.Conditions) {
		return false
	}
	x, y := *a, *b
	x.Conditions, y.Conditions = nil, nil
	x.ResourceClaimStatuses, y.ResourceClaimStatuses = nil, nil
	x.ExtendedResourceClaimStatus, y.ExtendedResourceClaimStatus = nil, nil
	x.NodeAllocatableResourceClaimStatuses, y.NodeAllocatableResourceClaimStatuses = nil, nil
	return equality.Semantic.DeepEqual(x, y)
}

func comparedCondition(t v1.PodConditionType) bool {
	return OwnedByKubelet(t) || t == v1.DisruptionTarget
}

func sameKubeletConditions(a, b []v1.PodCondition) bool {
	n := 0
	for i := range a {
		if !comparedCondition(a[i].Type) {
			continue
		}
		n++
		o := FindCondition(b, a[i].Type)
		if o == nil || o.Status != a[i].Status || o.Reason != a[i].Reason || o.Message != a[i].Message {
			return false
		}
	}
	for i := range b {
		if comparedCondition(b[i].Type) {
			n--
		}
	}
	return n == 0
}
