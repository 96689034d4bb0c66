package eviction

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/nodekit/nodekit/kubetypes"
)

// Annotations and priorities the kubelet uses to recognise pods it must not
// evict.
const (
	// SystemCriticalPriority is the lowest priority of a critical pod
	// (2 * 10^9, scheduling.SystemCriticalPriority).
	SystemCriticalPriority int32 = 2_000_000_000
)

// IsCriticalPod reports whether the kubelet must not evict pod (and admits
// it under any pressure): a static pod, a mirror pod, or a pod whose
// priority is at least SystemCriticalPriority.
func IsCriticalPod(pod *v1.Pod) bool {
	if kubetypes.IsStatic(pod) || kubetypes.IsMirror(pod) {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}

// isBestEffort reports whether no container (or the pod itself) requests
// or limits CPU or memory, the BestEffort QoS class.
func isBestEffort(pod *v1.Pod) bool {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass == v1.PodQOSBestEffort
	}
	if pod.Spec.Resources != nil && hasCPUOrMemory(*pod.Spec.Resources) {
		return false
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if hasCPUOrMemory(list[i].Resources) {
				return false
			}
		}
	}
	return true
}

func hasCPUOrMemory(r v1.ResourceRequirements) bool {
	for _, l := range []v1.ResourceList{r.Requests, r.Limits} {
		for _, n := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if q, ok := l[n]; ok && !q.IsZero() {
				return true
			}
		}
	}
	return false
}

// podRequest is the pod's effective request for a resource like the
// scheduler computes it (containers, init and sidecar containers, pod-level
// resources), plus the pod overhead when the request is non-zero.
func podRequest(pod *v1.Pod, name v1.ResourceName) int64 {
	if len(pod.Spec.InitContainers) == 0 && pod.Spec.Resources == nil && pod.Spec.Overhead == nil {
		// Fast path for the common case, without building ResourceLists.
		var v int64
		for i := range pod.Spec.Containers {
			if q, ok := pod.Spec.Containers[i].Resources.Requests[name]; ok {
				v += q.Value()
			}
		}
		return v
	}
	opts := resourcehelper.PodResourcesOptions{
		SkipContainerLevelResources: resourcehelper.IsPodLevelResourcesSet(pod),
		ExcludeOverhead:             true,
	}
	q, ok := resourcehelper.PodRequests(pod, opts)[name]
	if !ok || q.IsZero() {
		return 0
	}
	v := q.Value()
	if o, ok := pod.Spec.Overhead[name]; ok {
		v += o.Value()
	}
	return v
}

func podPriority(pod *v1.Pod) int32 { return corev1helpers.PodPriority(pod) }
