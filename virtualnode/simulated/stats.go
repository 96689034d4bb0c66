package simulated

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// PodStats implements virtualnode.StatsProvider with a usage model: every
// regular container of a running pod uses, from the moment it became
// ready, the CPU and memory of AnnotationUsageCPU and AnnotationUsageMemory
// if the pod sets them, else its own requests; its cumulative CPU time
// grows at that rate. A pod not running (or unknown) has no stats. An
// annotation that is not a quantity counts as unset.
func (s *Provider) PodStats(_ context.Context, pod *v1.Pod) (*statsapi.PodStats, error) {
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	p, ok := s.pods[pod.UID]
	var running bool
	var end, readyAt time.Time
	if ok {
		running, end, _ = p.outcome(now)
		readyAt = p.readyAt.time()
	}
	s.mu.Unlock()
	if !running || !end.IsZero() {
		return nil, nil
	}
	cpuOverride, hasCPU := usage(pod, AnnotationUsageCPU)
	memOverride, hasMem := usage(pod, AnnotationUsageMemory)
	ts := metav1.NewTime(now)
	started := metav1.NewTime(readyAt)
	up := now.Sub(readyAt).Seconds()
	st := &statsapi.PodStats{StartTime: started}
	var podCores, podCoreNanos, podMem uint64
	for _, c := range pod.Spec.Containers {
		cores := uint64(c.Resources.Requests.Cpu().MilliValue()) * 1e6 // nanocores
		if hasCPU {
			cores = uint64(cpuOverride.MilliValue()) * 1e6
		}
		mem := uint64(c.Resources.Requests.Memory().Value())
		if hasMem {
			mem = uint64(memOverride.Value())
		}
		coreNanos := uint64(float64(cores) * up)
		st.Containers = append(st.Containers, statsapi.ContainerStats{Name: c.Name, StartTime: started,
			CPU:    &statsapi.CPUStats{Time: ts, UsageNanoCores: &cores, UsageCoreNanoSeconds: &coreNanos},
			Memory: &statsapi.MemoryStats{Time: ts, WorkingSetBytes: &mem, UsageBytes: &mem}})
		podCores, podCoreNanos, podMem = podCores+cores, podCoreNanos+coreNanos, podMem+mem
	}
	st.CPU = &statsapi.CPUStats{Time: ts, UsageNanoCores: &podCores, UsageCoreNanoSeconds: &podCoreNanos}
	st.Memory = &statsapi.MemoryStats{Time: ts, WorkingSetBytes: &podMem, UsageBytes: &podMem}
	return st, nil
}

// usage reads a non-negative quantity annotation.
func usage(pod *v1.Pod, key string) (resource.Quantity, bool) {
	v, ok := pod.Annotations[key]
	if !ok {
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() < 0 {
		return resource.Quantity{}, false
	}
	return q, true
}
