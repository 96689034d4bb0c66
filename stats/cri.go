package stats

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// CPU rate keys of pod-level counters, by CRI ID.
const (
	keySandbox   = "sandbox:"
	keyContainer = "container:"
)

// podPass is one listing of the runtime's pods.
type podPass struct {
	p    *Provider
	ctx  context.Context
	now  time.Time
	pass uint64
	// full: build the whole summary (writable layers too), not only CPU
	// and memory.
	full bool
	// containerFs fills the capacity figures of writable layers; may be nil.
	containerFs *statsapi.FsStats
	// cgroups finds the pods' and containers' cgroups, for the pressure
	// the runtime does not report and the sandboxes' network namespaces.
	cgroups *podCgroups

	containers map[string]*runtimeapi.Container // running, by ID
	sandboxes  map[string]*runtimeapi.PodSandbox
	// byPod is ListContainerStats by sandbox ID, fetched at most once.
	byPod    map[string][]*runtimeapi.ContainerStats
	byPodErr error
	listed   bool
}

// listPods lists the pods and their usage from the runtime, as the
// kubelet's CRI stats provider with PodAndContainerStatsFromCRI: the
// running containers of the live sandboxes, with their sandbox's stats, or
// — when the runtime cannot report sandbox stats — grouped from container
// stats with pod CPU and memory summed. Pressure the runtime does not
// report, and the pods' network interfaces, come from the cgroups cg finds
// below PodsCgroup.
func (p *Provider) listPods(ctx context.Context, cg cgroupFS, now time.Time, full bool, containerFs *statsapi.FsStats) ([]statsapi.PodStats, error) {
	rt := p.cfg.Runtime
	pp := &podPass{p: p, ctx: ctx, now: now, full: full, containerFs: containerFs, pass: p.podRates.begin(),
		cgroups: newPodCgroups(cg, p.cfg.PodsCgroup)}
	containers, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{})
	if err != nil {
		return nil, fmt.Errorf("stats: ListContainers: %w", err)
	}
	sandboxes, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{})
	if err != nil {
		return nil, fmt.Errorf("stats: ListPodSandbox: %w", err)
	}
	pp.containers = runningContainers(containers)
	pp.sandboxes = liveSandboxes(sandboxes)

	var out []statsapi.PodStats
	sbStats, err := rt.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{})
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Pod sandbox stats unavailable; using container stats", "err", err)
		if out, err = pp.fromContainerStats(); err != nil {
			return nil, err
		}
	} else if out, err = pp.fromSandboxStats(sbStats); err != nil {
		return nil, err
	}
	p.podRates.prune(pp.pass)
	return out, nil
}

// runningContainers are the running containers by ID: the kubelet counts
// no exited container's usage.
func runningContainers(cs []*runtimeapi.Container) map[string]*runtimeapi.Container {
	out := make(map[string]*runtimeapi.Container, len(cs))
	for _, c := range cs {
		if c != nil && c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			out[c.Id] = c
		}
	}
	return out
}

// liveSandboxes is the kubelet's removeTerminatedPods: of the sandboxes of
// one pod name and namespace (a recreated pod or sandbox), the ready ones,
// or if none is ready the newest.
func liveSandboxes(sbs []*runtimeapi.PodSandbox) map[string]*runtimeapi.PodSandbox {
	type ref struct{ name, namespace string }
	byRef := make(map[ref][]*runtimeapi.PodSandbox, len(sbs))
	for _, sb := range sbs {
		if sb == nil || sb.Metadata == nil {
			continue
		}
		r := ref{sb.Metadata.Name, sb.Metadata.Namespace}
		byRef[r] = append(byRef[r], sb)
	}
	out := make(map[string]*runtimeapi.PodSandbox, len(sbs))
	for _, group := range byRef {
		if len(group) == 1 {
			out[group[0].Id] = group[0]
			continue
		}
		sort.SliceStable(group, func(i, j int) bool { return group[i].CreatedAt < group[j].CreatedAt })
		ready := false
		for _, sb := range group {
			if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
				out[sb.Id] = sb
				ready = true
			}
		}
		if !ready {
			newest := group[len(group)-1]
			out[newest.Id] = newest
		}
	}
	return out
}

// fromSandboxStats builds one PodStats per listed sandbox stats entry.
func (pp *podPass) fromSandboxStats(stats []*runtimeapi.PodSandboxStats) ([]statsapi.PodStats, error) {
	out := make([]statsapi.PodStats, 0, len(stats))
	for _, st := range stats {
		sb := pp.sandboxes[st.GetAttributes().GetId()]
		if sb == nil {
			continue // gone since ListPodSandbox, or superseded
		}
		lx := st.GetLinux()
		cstats := lx.GetContainers()
		if len(cstats) == 0 {
			// The runtime does not embed container stats (or the pod has
			// none running): take them from ListContainerStats.
			if err := pp.listContainerStats(); err != nil {
				return nil, err
			}
			cstats = pp.byPod[sb.Id]
		}
		ps := pp.pod(sb, cstats)
		if c := lx.GetCpu(); c != nil {
			ps.CPU = pp.cpu(keySandbox+sb.Id, c)
		}
		if m := lx.GetMemory(); m != nil {
			ps.Memory = criMemory(m, pp.now)
		}
		if pp.full {
			ps.Network = pp.podNetwork(sb, lx.GetNetwork())
			if pc := lx.GetProcess().GetProcessCount(); pc != nil {
				ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: u64(pc)}
			}
		}
		sumContainers(&ps)
		pp.podPressure(&ps, sb, lx)
		out = append(out, ps)
	}
	return out, nil
}

// fromContainerStats builds pods from container stats alone, in the order
// the runtime lists their first container.
func (pp *podPass) fromContainerStats() ([]statsapi.PodStats, error) {
	if err := pp.listContainerStats(); err != nil {
		return nil, err
	}
	var out []statsapi.PodStats
	for _, id := range pp.podOrder() {
		sb := pp.sandboxes[id]
		ps := pp.pod(sb, pp.byPod[id])
		if pp.full {
			ps.Network = pp.podNetwork(sb, nil)
		}
		sumContainers(&ps)
		pp.podPressure(&ps, sb, nil)
		out = append(out, ps)
	}
	return out, nil
}

// listContainerStats fetches ListContainerStats once per pass and groups
// the running containers' stats by sandbox ID.
func (pp *podPass) listContainerStats() error {
	if pp.listed {
		return pp.byPodErr
	}
	pp.listed = true
	cs, err := pp.p.cfg.Runtime.ListContainerStats(pp.ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		pp.byPodErr = fmt.Errorf("stats: ListContainerStats: %w", err)
		return pp.byPodErr
	}
	pp.byPod = make(map[string][]*runtimeapi.ContainerStats, len(pp.sandboxes))
	for _, s := range cs {
		c := pp.containers[s.GetAttributes().GetId()]
		if c == nil || pp.sandboxes[c.PodSandboxId] == nil {
			continue
		}
		pp.byPod[c.PodSandboxId] = append(pp.byPod[c.PodSandboxId], s)
	}
	return nil
}

// podOrder is the sandbox IDs of byPod in the runtime's listing order.
func (pp *podPass) podOrder() []string {
	ids := make([]string, 0, len(pp.byPod))
	for id := range pp.byPod {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := pp.sandboxes[ids[i]], pp.sandboxes[ids[j]]
		if a.CreatedAt != b.CreatedAt {
			return a.CreatedAt < b.CreatedAt
		}
		return a.Id < b.Id
	})
	return ids
}

// pod starts a PodStats for sandbox sb with its running containers.
func (pp *podPass) pod(sb *runtimeapi.PodSandbox, cstats []*runtimeapi.ContainerStats) statsapi.PodStats {
	ps := statsapi.PodStats{
		PodRef: statsapi.PodReference{Name: sb.Metadata.Name, Namespace: sb.Metadata.Namespace, UID: sb.Metadata.Uid},
		// The summary API's pod start time is the sandbox creation time.
		StartTime: metav1.NewTime(time.Unix(0, sb.CreatedAt)),
	}
	ps.Containers = make([]statsapi.ContainerStats, 0, len(cstats))
	for _, s := range cstats {
		c := pp.containers[s.GetAttributes().GetId()]
		if c == nil {
			continue // exited or removed since ListContainers
		}
		ps.Containers = append(ps.Containers, pp.container(sb, s, c))
	}
	return ps
}

// container converts the stats of container c of sandbox sb. Like the
// kubelet, a section the runtime omits is reported as zeros at the current
// time, so every running container has CPU, memory and swap figures (and
// IO in a full pass).
func (pp *podPass) container(sb *runtimeapi.PodSandbox, s *runtimeapi.ContainerStats, c *runtimeapi.Container) statsapi.ContainerStats {
	now := metav1.NewTime(pp.now)
	name := s.GetAttributes().GetMetadata().GetName()
	if name == "" {
		name = c.GetMetadata().GetName()
	}
	cs := statsapi.ContainerStats{
		Name: name,
		// The summary API's container start time is its creation time.
		StartTime: metav1.NewTime(time.Unix(0, c.CreatedAt)),
	}
	if s.Cpu != nil {
		cs.CPU = pp.cpu(keyContainer+c.Id, s.Cpu)
	} else {
		cs.CPU = &statsapi.CPUStats{Time: now, UsageCoreNanoSeconds: new(uint64), UsageNanoCores: new(uint64)}
	}
	if s.Memory != nil {
		cs.Memory = criMemory(s.Memory, pp.now)
	} else {
		cs.Memory = &statsapi.MemoryStats{Time: now, WorkingSetBytes: new(uint64), UsageBytes: new(uint64), RSSBytes: new(uint64)}
	}
	if s.Swap != nil {
		cs.Swap = &statsapi.SwapStats{Time: criTime(s.Swap.Timestamp, pp.now),
			SwapUsageBytes: u64(s.Swap.SwapUsageBytes), SwapAvailableBytes: u64(s.Swap.SwapAvailableBytes)}
	} else {
		cs.Swap = &statsapi.SwapStats{Time: now, SwapUsageBytes: new(uint64), SwapAvailableBytes: new(uint64)}
	}
	if pp.full {
		cs.Rootfs = pp.rootfs(s.WritableLayer)
	}
	pp.containerPressure(&cs, sb, s, c.Id)
	return cs
}

// cpu converts CRI CPU usage; usageNanoCores is the runtime's when given,
// else the rate over the cached sample of the same counter.
func (pp *podPass) cpu(key string, c *runtimeapi.CpuUsage) *statsapi.CPUStats {
	t := criTime(c.Timestamp, pp.now)
	out := &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: u64(c.UsageCoreNanoSeconds), UsageNanoCores: u64(c.UsageNanoCores)}
	if out.UsageNanoCores == nil && out.UsageCoreNanoSeconds != nil {
		out.UsageNanoCores = pp.p.podRates.observe(pp.pass, key, cpuSample{at: t.UnixNano(), usage: *out.UsageCoreNanoSeconds})
	}
	return out
}

// rootfs is a container's writable layer, with the capacity figures of the
// container filesystem.
func (pp *podPass) rootfs(wl *runtimeapi.FilesystemUsage) *statsapi.FsStats {
	fs := &statsapi.FsStats{}
	if wl == nil {
		return fs
	}
	fs.Time = criTime(wl.Timestamp, pp.now)
	fs.UsedBytes, fs.InodesUsed = u64(wl.UsedBytes), u64(wl.InodesUsed)
	if c := pp.containerFs; c != nil {
		fs.AvailableBytes, fs.CapacityBytes = copyU64(c.AvailableBytes), copyU64(c.CapacityBytes)
		fs.InodesFree, fs.Inodes = copyU64(c.InodesFree), copyU64(c.Inodes)
	}
	return fs
}

// sumContainers fills a pod's CPU and memory the sandbox did not report
// with the sum of its containers', and its swap (which CRI has no pod-level
// figure for) always. A sum is reported only if a container has the
// figure; usageNanoCores only if every container with CPU stats has it.
func sumContainers(ps *statsapi.PodStats) {
	var cpu statsapi.CPUStats
	var mem statsapi.MemoryStats
	var swap statsapi.SwapStats
	var haveCPU, haveMem, haveSwap, allRates = false, false, false, true
	for i := range ps.Containers {
		c := &ps.Containers[i]
		if c.CPU != nil {
			haveCPU = true
			cpu.Time = latest(cpu.Time, c.CPU.Time)
			cpu.UsageCoreNanoSeconds = addU64(cpu.UsageCoreNanoSeconds, c.CPU.UsageCoreNanoSeconds)
			cpu.UsageNanoCores = addU64(cpu.UsageNanoCores, c.CPU.UsageNanoCores)
			allRates = allRates && c.CPU.UsageNanoCores != nil
		}
		if m := c.Memory; m != nil {
			haveMem = true
			mem.Time = latest(mem.Time, m.Time)
			mem.AvailableBytes = addU64(mem.AvailableBytes, m.AvailableBytes)
			mem.UsageBytes = addU64(mem.UsageBytes, m.UsageBytes)
			mem.WorkingSetBytes = addU64(mem.WorkingSetBytes, m.WorkingSetBytes)
			mem.RSSBytes = addU64(mem.RSSBytes, m.RSSBytes)
			mem.PageFaults = addU64(mem.PageFaults, m.PageFaults)
			mem.MajorPageFaults = addU64(mem.MajorPageFaults, m.MajorPageFaults)
		}
		if s := c.Swap; s != nil {
			haveSwap = true
			swap.Time = latest(swap.Time, s.Time)
			swap.SwapUsageBytes = addU64(swap.SwapUsageBytes, s.SwapUsageBytes)
			swap.SwapAvailableBytes = addU64(swap.SwapAvailableBytes, s.SwapAvailableBytes)
		}
	}
	if ps.CPU == nil && haveCPU {
		if !allRates {
			cpu.UsageNanoCores = nil
		}
		ps.CPU = &cpu
	}
	if ps.Memory == nil && haveMem {
		ps.Memory = &mem
	}
	if haveSwap {
		ps.Swap = &swap
	}
}

func latest(a, b metav1.Time) metav1.Time {
	if a.Before(&b) {
		return b
	}
	return a
}

// addU64 returns a fresh sum of a (owned by the caller's accumulator) and
// b; nil + nil is nil.
func addU64(a, b *uint64) *uint64 {
	switch {
	case b == nil:
		return a
	case a == nil:
		v := *b
		return &v
	}
	*a += *b
	return a
}

func criMemory(m *runtimeapi.MemoryUsage, now time.Time) *statsapi.MemoryStats {
	return &statsapi.MemoryStats{
		Time:            criTime(m.Timestamp, now),
		AvailableBytes:  u64(m.AvailableBytes),
		UsageBytes:      u64(m.UsageBytes),
		WorkingSetBytes: u64(m.WorkingSetBytes),
		RSSBytes:        u64(m.RssBytes),
		PageFaults:      u64(m.PageFaults),
		MajorPageFaults: u64(m.MajorPageFaults),
	}
}

// criNetwork converts the sandbox's network usage: the default interface
// at the top level and, as the summary lists every interface of the pod
// (cadvisor's view) while the CRI lists the others apart, first in
// Interfaces, followed by the others (one entry per name).
func criNetwork(n *runtimeapi.NetworkUsage, now time.Time) *statsapi.NetworkStats {
	if n == nil {
		return nil
	}
	out := &statsapi.NetworkStats{Time: criTime(n.Timestamp, now),
		Interfaces: make([]statsapi.InterfaceStats, 0, len(n.Interfaces)+1)}
	if d := n.DefaultInterface; d != nil {
		out.InterfaceStats = criInterface(d)
		out.Interfaces = append(out.Interfaces, criInterface(d))
	}
	for _, i := range n.Interfaces {
		if i != nil && !slices.ContainsFunc(out.Interfaces, func(s statsapi.InterfaceStats) bool { return s.Name == i.Name }) {
			out.Interfaces = append(out.Interfaces, criInterface(i))
		}
	}
	return out
}

func criInterface(i *runtimeapi.NetworkInterfaceUsage) statsapi.InterfaceStats {
	return statsapi.InterfaceStats{Name: i.Name, RxBytes: u64(i.RxBytes), RxErrors: u64(i.RxErrors),
		TxBytes: u64(i.TxBytes), TxErrors: u64(i.TxErrors)}
}

// criTime is a CRI timestamp, or now for a runtime that leaves it zero.
func criTime(ns int64, now time.Time) metav1.Time {
	if ns == 0 {
		return metav1.NewTime(now)
	}
	return metav1.NewTime(time.Unix(0, ns))
}

// u64 copies an optional CRI value; nil stays nil.
func u64(v *runtimeapi.UInt64Value) *uint64 {
	if v == nil {
		return nil
	}
	u := v.Value
	return &u
}

func copyU64(v *uint64) *uint64 {
	if v == nil {
		return nil
	}
	u := *v
	return &u
}
