package stats

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// defaultInterfaceName is the interface the kubelet reports as the
// network's top-level (default) interface.
const defaultInterfaceName = "eth0"

// hostKeyNode is the CPU rate key of the node.
const hostKeyNode = "node"

// nodeMemory reads the node's memory and swap as the kubelet reports
// cadvisor's root container: usage and working set from the root cgroup
// (v1: memory.usage_in_bytes less total_inactive_file; v2, whose root has
// no memory.current: memory.stat's anon + file less inactive_file, as
// runc emulates it), available MemTotal − working set; /proc/meminfo's
// MemTotal − MemFree and MemTotal − MemAvailable where the root cgroup
// has no memory figures. RSS and page faults come from the root cgroup's
// memory.stat when it has them, and the pressure from its memory.pressure.
// Swap is SwapTotal − SwapFree, available SwapFree, reported (as zeros)
// even without swap, as the kubelet does.
func nodeMemory(mi meminfo, root cgroupStats, now metav1.Time) (*statsapi.MemoryStats, *statsapi.SwapStats) {
	usage, ws := mi.total-mi.free, mi.total-mi.available
	if root.memory != nil {
		usage, ws = root.memory.usage, root.memory.workingSet
	} else if anon, ok := root.stat["anon"]; ok {
		if file, ok := root.stat["file"]; ok {
			usage = anon + file
			ws = usage - min(root.stat["inactive_file"], usage)
		}
	}
	avail := mi.total - min(ws, mi.total)
	mem := &statsapi.MemoryStats{Time: now, AvailableBytes: &avail, WorkingSetBytes: &ws, UsageBytes: &usage,
		PSI: root.psi.memory}
	if root.stat != nil {
		rss, ok := root.stat["anon"]
		if !ok {
			rss, ok = root.stat["total_rss"]
		}
		if ok {
			mem.RSSBytes = &rss
		}
		if v, ok := root.stat["pgfault"]; ok {
			mem.PageFaults = &v
		}
		if v, ok := root.stat["pgmajfault"]; ok {
			mem.MajorPageFaults = &v
		}
	}
	if !mi.hasSwap {
		return mem, nil
	}
	used, free := mi.swapTotal-mi.swapFree, mi.swapFree
	return mem, &statsapi.SwapStats{Time: now, SwapUsageBytes: &used, SwapAvailableBytes: &free}
}

// nodeCPU is the node's cumulative CPU time (the root cgroup's, or
// /proc/stat's where the root cgroup has no CPU accounting), its rate, and
// the root cgroup's CPU pressure.
func (p *Provider) nodeCPU(ctx context.Context, root cgroupStats, stat *procStat, now time.Time) *statsapi.CPUStats {
	usage := root.cpu
	if usage == nil && stat != nil {
		usage = &stat.cpu
	}
	if usage == nil {
		klog.FromContext(ctx).V(4).Info("Node CPU usage unavailable")
		return nil
	}
	v := *usage
	return &statsapi.CPUStats{
		Time:                 metav1.NewTime(now),
		UsageCoreNanoSeconds: &v,
		UsageNanoCores:       p.hostRates.observe(0, hostKeyNode, cpuSample{at: now.UnixNano(), usage: v}),
		PSI:                  root.psi.cpu,
	}
}

// ioStats is the IO object of a cgroup's figures: its IO pressure at now,
// nil when the cgroup has no IO controller directory.
func ioStats(psi *statsapi.PSIStats, now metav1.Time) *statsapi.IOStats {
	if psi == nil {
		return nil
	}
	return &statsapi.IOStats{Time: now, PSI: psi}
}

// nodeNetwork reports the host's interfaces (without loopback, veths and
// docker/nerdctl bridges, as cadvisor), eth0 as the default one.
func nodeNetwork(ctx context.Context, procPath string, now metav1.Time) *statsapi.NetworkStats {
	ifaces, err := readNetDev(procPath)
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Node network stats unavailable", "err", err)
		return nil
	}
	if len(ifaces) == 0 {
		return nil
	}
	return netStats(ifaces, now)
}

// netStats lists ifaces, eth0 also as the default interface, as the
// kubelet converts cadvisor's network stats.
func netStats(ifaces []netInterface, now metav1.Time) *statsapi.NetworkStats {
	ns := &statsapi.NetworkStats{Time: now, Interfaces: make([]statsapi.InterfaceStats, 0, len(ifaces))}
	for _, i := range ifaces {
		s := statsapi.InterfaceStats{Name: i.name, RxBytes: &i.rxBytes, RxErrors: &i.rxErrors, TxBytes: &i.txBytes, TxErrors: &i.txErrors}
		if i.name == defaultInterfaceName {
			ns.InterfaceStats = s
		}
		ns.Interfaces = append(ns.Interfaces, s)
	}
	return ns
}

// rlimit reports the PID limit and the number of tasks.
func (p *Provider) rlimit(now metav1.Time) (*statsapi.RlimitStats, error) {
	maxPID, n, err := pidLimits(p.cfg.ProcPath)
	if err != nil {
		return nil, err
	}
	return &statsapi.RlimitStats{Time: now, MaxPID: &maxPID, NumOfRunningProcesses: &n}, nil
}
