package kubeletapi

import (
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/klog/v2"
)

// maxMemoryLimit is cadvisor's bound above which a memory limit is no
// limit (served as 0): v1's unlimited is 2^63 rounded down to a page.
const maxMemoryLimit = uint64(1) << 62

// cgroup gathers the families read from the entry's cgroup id, with
// Config.Cadvisor.CgroupRoot, at the scrape's time; the limits without a
// time, as cadvisor's spec families. What cannot be read is left out.
func (g *cadvisorGatherer) cgroup(id string) {
	if g.cgroups == nil || id == "" {
		return
	}
	s := g.cgroups.Read(id)
	if !s.HasMemory && !s.HasCPUUsage && !s.HasCPUSpec {
		klog.FromContext(g.ctx).V(4).Info("Cgroup not readable for the cadvisor metrics", "cgroup", id)
		return
	}
	now := g.now
	if s.HasMemory {
		g.add(famMemoryCache, g.labels, float64(s.Cache), now)
		g.add(famMemoryMappedFile, g.labels, float64(s.MappedFile), now)
	}
	if s.HasCPUUsage {
		g.add(famCPUUser, g.labels, float64(s.UserNanos)/float64(time.Second), now)
		g.add(famCPUSystem, g.labels, float64(s.SystemNanos)/float64(time.Second), now)
	}
	// cadvisor serves the CFS families only for a cgroup with a quota.
	if s.HasThrottling && s.Quota != 0 {
		g.add(famCPUCFSPeriods, g.labels, float64(s.Periods), now)
		g.add(famCPUCFSThrottledPeriods, g.labels, float64(s.ThrottledPeriods), now)
		g.add(famCPUCFSThrottledSeconds, g.labels, float64(s.ThrottledNanos)/float64(time.Second), now)
	}
	if s.HasCPUSpec {
		g.add(famSpecCPUPeriod, g.labels, float64(s.Period), time.Time{})
		if s.Quota != 0 {
			g.add(famSpecCPUQuota, g.labels, float64(s.Quota), time.Time{})
		}
		g.add(famSpecCPUShares, g.labels, float64(s.Shares), time.Time{})
	}
	if s.HasMemoryLimit {
		limit := float64(s.MemoryLimit)
		if s.MemoryLimit > maxMemoryLimit {
			limit = 0
		}
		g.add(famSpecMemoryLimit, g.labels, limit, time.Time{})
	}
}

// namespaceNetwork gathers the packet counters of the network namespace of
// process pid, or (pid 0) of a process of the cgroup id or of one of its
// children: a pod's namespace, which all its containers share.
func (g *cadvisorGatherer) namespaceNetwork(id string, pid int) {
	if g.cgroups == nil || id == "" {
		return
	}
	log := klog.FromContext(g.ctx).V(4)
	if pid == 0 {
		var err error
		if pid, err = g.cgroups.PID(id); err != nil {
			log.Info("No process for the network of a cgroup", "cgroup", id, "err", err)
			return
		}
	}
	ifaces, err := g.cgroups.Network(pid)
	if err != nil {
		log.Info("Network counters not readable", "cgroup", id, "pid", pid, "err", err)
		return
	}
	now := g.now
	for i := range ifaces {
		in := &ifaces[i]
		labels := withLabels(g.labels, &dto.LabelPair{Name: &nameInterface, Value: &in.Name})
		g.add(famRxPackets, labels, float64(in.RxPackets), now)
		g.add(famRxDropped, labels, float64(in.RxDropped), now)
		g.add(famTxPackets, labels, float64(in.TxPackets), now)
		g.add(famTxDropped, labels, float64(in.TxDropped), now)
	}
}
