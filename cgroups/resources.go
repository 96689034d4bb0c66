package cgroups

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// The kubelet's CFS conversions.
const (
	// MinShares is the smallest CPU shares value (the kernel's minimum).
	MinShares = 2
	// MaxShares is the largest CPU shares value.
	MaxShares = 262144
	// SharesPerCPU is the CPU shares of one whole CPU.
	SharesPerCPU = 1024
	// QuotaPeriod is the CFS period in microseconds (100ms).
	QuotaPeriod = 100000
	// MinQuota is the smallest CFS quota in microseconds (1ms).
	MinQuota = 1000
)

// Resources are the values written to one cgroup. A negative CPUQuota or
// Memory means unlimited; zero PIDs leaves pids.max alone.
type Resources struct {
	// CPUShares is cpu.shares (cpu.weight on v2, converted).
	CPUShares uint64
	// CPUQuota is the CFS quota in µs per CPUPeriod; -1 for none.
	CPUQuota int64
	// CPUPeriod is the CFS period in µs.
	CPUPeriod uint64
	// Memory is the memory limit in bytes; -1 for none.
	Memory int64
	// HugePages are limits in bytes by page size in bytes. Sizes the
	// node has but the map lacks are limited to 0 on pod cgroups.
	HugePages map[int64]int64
	// PIDs is pids.max when positive.
	PIDs int64
}

// SharesFromMilliCPU converts a CPU request to CPU shares as the kubelet
// does: 0 → MinShares, clamped to [MinShares, MaxShares].
func SharesFromMilliCPU(milli int64) uint64 {
	if milli == 0 {
		return MinShares
	}
	return uint64(min(max(milli*SharesPerCPU/1000, MinShares), MaxShares))
}

// QuotaFromMilliCPU converts a CPU limit to a CFS quota over period µs:
// 0 for no limit, else at least MinQuota.
func QuotaFromMilliCPU(milli, period int64) int64 {
	if milli == 0 {
		return 0
	}
	return max(milli*period/1000, MinQuota)
}

// PodResources is what the pod's cgroup gets, the kubelet's rules:
// Guaranteed pods get CPU shares from their requests, a CFS quota and a
// memory limit; Burstable pods get shares, and a quota or memory limit
// only when every container declares that limit (or the pod does at pod
// level); BestEffort pods get MinShares. Requests and limits are summed
// over the containers as the scheduler does (init containers by their
// maximum, sidecars added), with pod overhead and pod-level resources.
func PodResources(pod *v1.Pod) Resources {
	cpuLimits, memLimits := true, true
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{
		ContainerFn: func(res v1.ResourceList, _ resourcehelper.ContainerType) {
			if res.Cpu().IsZero() {
				cpuLimits = false
			}
			if res.Memory().IsZero() {
				memLimits = false
			}
		},
	})
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		cpuLimits = cpuLimits || !pod.Spec.Resources.Limits.Cpu().IsZero()
		memLimits = memLimits || !pod.Spec.Resources.Limits.Memory().IsZero()
	}
	r := Resources{
		CPUShares: SharesFromMilliCPU(reqs.Cpu().MilliValue()),
		CPUQuota:  -1,
		CPUPeriod: QuotaPeriod,
		Memory:    -1,
		HugePages: hugePages(reqs),
	}
	quota := QuotaFromMilliCPU(limits.Cpu().MilliValue(), QuotaPeriod)
	switch QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		r.CPUQuota, r.Memory = quota, limits.Memory().Value()
	case v1.PodQOSBurstable:
		if cpuLimits && quota > 0 {
			r.CPUQuota = quota
		}
		if memLimits && !limits.Memory().IsZero() {
			r.Memory = limits.Memory().Value()
		}
	default:
		r.CPUShares = MinShares
	}
	return r
}

// AllocatableResources is what the kubepods cgroup gets when node
// allocatable is enforced: shares for the allocatable CPU, the memory,
// PIDs and huge pages limits.
func AllocatableResources(alloc v1.ResourceList) Resources {
	r := Resources{
		CPUShares: SharesFromMilliCPU(alloc.Cpu().MilliValue()),
		CPUQuota:  -1,
		CPUPeriod: QuotaPeriod,
		Memory:    -1,
		HugePages: hugePages(alloc),
	}
	if m, ok := alloc[v1.ResourceMemory]; ok {
		r.Memory = m.Value()
	}
	return r
}

// hugePages sums hugepages-<size> resources by page size in bytes.
func hugePages(list v1.ResourceList) map[int64]int64 {
	out := map[int64]int64{}
	for name, q := range list {
		size, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
		if !ok {
			continue
		}
		sz, err := resource.ParseQuantity(size)
		if err != nil {
			continue
		}
		out[sz.Value()] += q.Value()
	}
	return out
}

// QOSClass is the pod's QoS class: the one the API server recorded in its
// status, else computed as the API server does (cpu and memory only; init
// containers count; pod-level resources when set).
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputeQOSClass(pod)
}

// ComputeQOSClass computes the pod's QoS class from its spec: BestEffort
// without a cpu or memory request or limit; Guaranteed when cpu and memory
// limits are set everywhere and every request equals its limit; else
// Burstable.
func ComputeQOSClass(pod *v1.Pod) v1.PodQOSClass {
	requests, limits := v1.ResourceList{}, v1.ResourceList{}
	guaranteed := true
	add := func(list v1.ResourceList, name v1.ResourceName, q resource.Quantity) {
		sum := list[name]
		sum.Add(q)
		list[name] = sum
	}
	supported := func(n v1.ResourceName) bool { return n == v1.ResourceCPU || n == v1.ResourceMemory }
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		for n, q := range pod.Spec.Resources.Requests {
			if supported(n) && q.Sign() > 0 {
				add(requests, n, q)
			}
		}
		for n, q := range pod.Spec.Resources.Limits {
			if supported(n) && q.Sign() > 0 {
				add(limits, n, q)
			}
		}
		guaranteed = len(limits) == 2
	} else {
		all := append(append([]v1.Container{}, pod.Spec.Containers...), pod.Spec.InitContainers...)
		for _, c := range all {
			for n, q := range c.Resources.Requests {
				if supported(n) && q.Sign() > 0 {
					add(requests, n, q)
				}
			}
			found := 0
			for n, q := range c.Resources.Limits {
				if supported(n) && q.Sign() > 0 {
					found++
					add(limits, n, q)
				}
			}
			if found < 2 {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return v1.PodQOSBestEffort
	}
	if guaranteed {
		for n, req := range requests {
			if l, ok := limits[n]; !ok || l.Cmp(req) != 0 {
				guaranteed = false
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}
