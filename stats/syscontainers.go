package stats

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// systemContainers reports the kubelet, runtime, misc and pods system
// containers whose cgroups can be read, in that order; full adds their IO.
// The pods container falls back to the pods' summed working set when
// AllocatableMemory is set and its cgroup cannot be read.
func (p *Provider) systemContainers(ctx context.Context, fs cgroupFS, pods []statsapi.PodStats, now, boot time.Time, full bool) []statsapi.ContainerStats {
	logger := klog.FromContext(ctx)
	kubelet := p.cfg.KubeletCgroup
	if kubelet == "" {
		var err error
		if kubelet, err = selfCgroup(p.cfg.ProcPath, fs.v2); err != nil {
			logger.V(4).Info("Cannot find the kubelet's cgroup", "err", err)
		}
	}
	var out []statsapi.ContainerStats
	for _, sc := range []struct{ name, cgroup string }{
		{statsapi.SystemContainerKubelet, kubelet},
		{statsapi.SystemContainerRuntime, p.cfg.RuntimeCgroup},
		{statsapi.SystemContainerMisc, p.cfg.SystemCgroup},
		{statsapi.SystemContainerPods, p.cfg.PodsCgroup},
	} {
		if sc.cgroup == "" {
			continue
		}
		st, err := fs.read(sc.cgroup)
		if err != nil {
			if errors.Is(err, errNoCgroup) {
				logger.V(4).Info("System container cgroup not found", "container", sc.name, "cgroup", sc.cgroup)
			} else {
				logger.Error(err, "Failed to get system container stats", "container", sc.name, "cgroup", sc.cgroup)
			}
			continue
		}
		cs := p.cgroupContainer(sc.name, sc.cgroup, st, now, boot, full)
		if sc.name == statsapi.SystemContainerKubelet {
			cs.StartTime = metav1.NewTime(p.created)
		}
		if sc.name == statsapi.SystemContainerPods && p.cfg.AllocatableMemory > 0 && cs.Memory != nil {
			alloc := uint64(p.cfg.AllocatableMemory)
			avail := alloc - min(*cs.Memory.WorkingSetBytes, alloc)
			cs.Memory.AvailableBytes = &avail
		}
		out = append(out, cs)
	}
	if p.cfg.AllocatableMemory > 0 && !hasContainer(out, statsapi.SystemContainerPods) {
		out = append(out, p.podsFromPods(pods, metav1.NewTime(now)))
	}
	return out
}

func hasContainer(cs []statsapi.ContainerStats, name string) bool {
	for i := range cs {
		if cs[i].Name == name {
			return true
		}
	}
	return false
}

// cgroupContainer converts a cgroup's figures (read at now; boot is the
// earliest start time reported) as the kubelet converts
// cadvisor's: available = limit − working set when limited, swap available
// = swap limit − swap usage, CPU and memory with their pressure, and with
// full the IO pressure.
func (p *Provider) cgroupContainer(name, cgroup string, st cgroupStats, now, boot time.Time, full bool) statsapi.ContainerStats {
	t := metav1.NewTime(now)
	cs := statsapi.ContainerStats{Name: name, StartTime: metav1.NewTime(st.created)}
	if !st.created.IsZero() && st.created.Before(boot) {
		cs.StartTime = metav1.NewTime(boot) // cadvisor's floor
	}
	if st.cpu != nil {
		v := *st.cpu
		cs.CPU = &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: &v,
			UsageNanoCores: p.hostRates.observe(0, "cgroup:"+cgroup, cpuSample{at: now.UnixNano(), usage: v}),
			PSI:            st.psi.cpu}
	}
	if full {
		cs.IO = ioStats(st.psi.io, t)
	}
	if m := st.memory; m != nil {
		cs.Memory = &statsapi.MemoryStats{Time: t, UsageBytes: &m.usage, WorkingSetBytes: &m.workingSet,
			RSSBytes: &m.rss, PageFaults: &m.pageFaults, MajorPageFaults: &m.majorPageFaults, PSI: st.psi.memory}
		if m.limit != nil {
			avail := *m.limit - min(*m.limit, m.workingSet)
			cs.Memory.AvailableBytes = &avail
		}
		if st.swap != nil {
			sw := *st.swap
			cs.Swap = &statsapi.SwapStats{Time: t, SwapUsageBytes: &sw}
			if st.swapLimit != nil {
				avail := *st.swapLimit - min(*st.swapLimit, sw)
				cs.Swap.SwapAvailableBytes = &avail
			}
		}
	}
	return cs
}

// podsFromPods is the "pods" system container without its cgroup:
// allocatable memory minus the pods' working set.
func (p *Provider) podsFromPods(pods []statsapi.PodStats, now metav1.Time) statsapi.ContainerStats {
	var ws uint64
	for i := range pods {
		if m := pods[i].Memory; m != nil && m.WorkingSetBytes != nil {
			ws += *m.WorkingSetBytes
		}
	}
	alloc := uint64(p.cfg.AllocatableMemory)
	avail := alloc - min(ws, alloc)
	return statsapi.ContainerStats{
		Name: statsapi.SystemContainerPods, StartTime: now,
		Memory: &statsapi.MemoryStats{Time: now, AvailableBytes: &avail, WorkingSetBytes: &ws},
	}
}
