package eviction

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Reason is the pod status reason of an evicted pod, the reason of the
// Evicted event, and the reason of a pod rejected by Admit.
const Reason = "Evicted"

// Annotations upstream puts on the Evicted event.
const (
	// OffendingContainersKey lists the containers using more than requested.
	OffendingContainersKey = "offending_containers"
	// OffendingContainersUsageKey lists their usage.
	OffendingContainersUsageKey = "offending_containers_usage"
	// OffendingPodKey names a pod using more than its pod-level request.
	OffendingPodKey = "offending_pod"
	// OffendingPodUsageKey is that pod's usage.
	OffendingPodUsageKey = "offending_pod_usage"
	// StarvedResourceKey is the resource being reclaimed.
	StarvedResourceKey = "starved_resource"
)

// formatAmount renders an amount of a resource as upstream does: binary
// suffixes for bytes, decimal for counts.
func formatAmount(res v1.ResourceName, v int64) string {
	f := resource.DecimalSI
	if res == v1.ResourceMemory || res == v1.ResourceEphemeralStorage {
		f = resource.BinarySI
	}
	return resource.NewQuantity(v, f).String()
}

// thresholdQuantity renders a threshold's level for a capacity the way
// upstream does (a percentage is resolved to bytes, binary suffixes).
func thresholdQuantity(v ThresholdValue, capacity int64) string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	return resource.NewQuantity(v.amount(capacity), resource.BinarySI).String()
}

// EvictionMessage builds upstream's eviction message and event annotations
// for evicting pod to reclaim res. thresholds are the thresholds driving
// eviction and obs the observations they were met with; stats gives the
// pod's usage. Example:
//
//	The node was low on resource: memory. Threshold quantity: 100Mi,
//	available: 60Mi. Container app was using 1Gi, request is 256Mi, has
//	larger consumption of memory.
func EvictionMessage(res v1.ResourceName, pod *v1.Pod, stats StatsFunc, thresholds []Threshold, obs Observations) (string, map[string]string) {
	var b strings.Builder
	annotations := map[string]string{}
	fmt.Fprintf(&b, "The node was low on resource: %v. ", res)
	for _, t := range thresholds {
		if t.Signal.Resource() != res {
			continue
		}
		if o, ok := obs[t.Signal]; ok {
			fmt.Fprintf(&b, "Threshold quantity: %v, available: %v. ", thresholdQuantity(t.Value, o.Capacity), formatAmount(res, o.Available))
			break
		}
	}
	ps, ok := stats(pod)
	if !ok {
		return b.String(), annotations
	}
	if res == v1.ResourceMemory && resourcehelper.IsPodLevelResourcesSet(pod) && ps.Memory != nil {
		if req, ok := pod.Spec.Resources.Requests[v1.ResourceMemory]; ok {
			usage := formatAmount(res, memoryUsage(ps.Memory))
			fmt.Fprintf(&b, "Pod %s was using %s, request is %s, has larger consumption of %v. ", pod.Name, usage, req.String(), res)
			annotations[OffendingPodKey] = pod.Name
			annotations[OffendingPodUsageKey] = usage
		}
	}
	var names, usages []string
	for i := range ps.Containers {
		cs := &ps.Containers[i]
		c := findContainer(pod, cs.Name)
		if c == nil {
			continue
		}
		usage, ok := containerUsage(cs, res)
		req := c.Resources.Requests[res]
		if !ok || usage <= req.Value() {
			continue
		}
		u := formatAmount(res, usage)
		fmt.Fprintf(&b, "Container %s was using %s, request is %s, has larger consumption of %v. ", c.Name, u, req.String(), res)
		names = append(names, c.Name)
		usages = append(usages, u)
	}
	annotations[OffendingContainersKey] = strings.Join(names, ",")
	annotations[OffendingContainersUsageKey] = strings.Join(usages, ",")
	annotations[StarvedResourceKey] = string(res)
	return b.String(), annotations
}

// findContainer finds a regular or init container by name; ephemeral
// containers have no requests and are never blamed.
func findContainer(pod *v1.Pod, name string) *v1.Container {
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

func containerUsage(cs *statsapi.ContainerStats, res v1.ResourceName) (int64, bool) {
	switch res {
	case v1.ResourceMemory:
		if cs.Memory != nil && cs.Memory.WorkingSetBytes != nil {
			return int64(*cs.Memory.WorkingSetBytes), true
		}
	case v1.ResourceEphemeralStorage:
		if cs.Rootfs != nil && cs.Rootfs.UsedBytes != nil && cs.Logs != nil && cs.Logs.UsedBytes != nil {
			return int64(*cs.Rootfs.UsedBytes + *cs.Logs.UsedBytes), true
		}
	}
	return 0, false
}
