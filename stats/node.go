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

// nodeMemory reads the node's memory and swap. Memory is /proc/meminfo's:
// capacity MemTotal, available MemAvailable, working set their difference,
// usage MemTotal − MemFree; RSS and page faults come from the root cgroup's
// memory.stat when it has them. Swap is SwapTotal − SwapFree, available
// SwapFree, reported (as zeros) even without swap, as the kubelet does.
func nodeMemory(mi meminfo, root cgroupStats, now metav1.Time) (*statsapi.MemoryStats, *statsapi.SwapStats) {
	avail, ws, usage := mi.available, mi.total-mi.available, mi.total-mi.free
	mem := &statsapi.MemoryStats{Time: now, AvailableBytes: &avail, WorkingSetBytes: &ws, UsageBytes: &usage}
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
// /proc/stat's where the root cgroup has no CPU accounting) and its rate.
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
	}
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
