// Package stats produces the node's stats/v1alpha1 Summary, the kubelet's
// /stats/summary document, for a real Linux host: what the eviction manager
// observes and what /stats/summary and /metrics/resource serve (and
// metrics-server scrapes).
//
// # Model
//
// A [Provider] built with [New] holds no goroutine and reads everything on
// each call, from files and the runtime, without cadvisor:
//
//   - node memory from the root cgroup as cadvisor reads its root
//     container (usage less inactive file pages; v2's root from its
//     memory.stat, as runc emulates it), capacity and swap from
//     /proc/meminfo, RSS and page faults from the root cgroup's
//     memory.stat; node CPU from the root cgroup (cpu.stat on
//     cgroup v2, cpuacct.usage on v1) or /proc/stat; the node's network
//     interfaces from /proc/1/net/dev; PID limits from procfs; the node,
//     image and container filesystems by statfs(2); the node's start time is
//     its boot time;
//   - the "kubelet", "runtime", "misc" and "pods" system containers from the
//     CPU and memory files of the cgroups named in [Config] (a cgroup that
//     cannot be read is left out); with AllocatableMemory the "pods"
//     container reports allocatable memory minus the pods' working set
//     (the allocatableMemory.available eviction signal);
//   - pods and containers from the CRI (ListPodSandbox, ListContainers,
//     ListPodSandboxStats, ListContainerStats): the running containers of
//     the live sandboxes, pod CPU and memory from the sandbox's stats or
//     else summed from its containers, pod network and process count from
//     the sandbox, start times from creation times; plus each container's
//     log usage and each pod's volumes and local ephemeral storage;
//   - pressure stall information (PSI, the psi objects of CPU, memory and
//     IO, some and full, total and 10s/60s/300s averages): the node's
//     from the root cgroup, the system containers' from theirs, a pod's or
//     container's from the runtime where it reports them (CRI PsiStats)
//     and else from the pod's or container's cgroup, found below
//     PodsCgroup. Cgroup v2 figures come from cpu.pressure, memory.pressure
//     and io.pressure; on cgroup v1, or where a file is absent (a kernel
//     without PSI) or PSI is off, they are zeros, which is what the kubelet
//     reports from cadvisor there. Totals are the files' microseconds, as
//     the kubelet's (the API's comment says nanoseconds; the kubelet copies
//     cadvisor's and the CRI's figures unchanged, and cadvisor's own
//     metrics divide them by 10^6);
//   - IO objects (time and IO pressure) in Get: the node's and a system
//     container's when its cgroup has an IO directory (io on v2, blkio on
//     v1), as cadvisor's; every container's (at the current time when
//     nothing is known); a pod's from the runtime, its cgroup, or else timed
//     as its newest container's, without pressure;
//   - a pod's interfaces: every interface of the sandbox's network
//     namespace, read as cadvisor reads it (the first process of the
//     sandbox's cgroup, its /proc/<pid>/net/dev, without loopback, veths
//     and docker/nerdctl bridges), else the runtime's default interface
//     followed by the others it reports; the runtime's default interface
//     (eth0 without one) is also the network's top level.
//
// [Provider.Get] reads all of it; [Provider.GetCPUAndMemoryStats] only the
// CPU (with its pressure), memory (with its pressure) and swap figures,
// which is what /metrics/resource needs.
//
// A pod's volumes are what Config.PodVolumes reports ([PodVolume]): used
// bytes and inodes, the figures of the filesystem the volume is on, the
// claim (PVCRef) of a persistentVolumeClaim or generic ephemeral volume,
// and its health when known. A claim's volume is never local ephemeral
// storage.
//
// A [Collector] ([NewCollector]) serves on a host's /metrics what the
// kubelet's volume stats and log metrics collectors serve, from any
// [SummaryProvider] (a Provider, or a provider's summary on a virtual
// node): kubelet_volume_stats_capacity_bytes, _available_bytes,
// _used_bytes, _inodes, _inodes_free, _inodes_used and
// _health_status_abnormal {namespace, persistentvolumeclaim} for each claim
// mounted by a pod, once per claim, and
// kubelet_container_log_filesystem_used_bytes {uid, namespace, pod,
// container}, with upstream's help texts ("[ALPHA] …").
//
// usageNanoCores is the runtime's when it reports one; otherwise it is the
// increase of the cumulative counter (CRI usage_core_nano_seconds, cgroup
// CPU time) over the previous sample of the same container, sandbox or
// cgroup, taken at least CPUSampleInterval (10s) earlier, with CRI sample
// timestamps (the injected clock for files). A sample sooner than that
// reports the previous rate, so frequent callers neither shorten the window
// nor see spikes. A counter lower than the cached one (a restart) or a
// timestamp older than the cached one starts over without a rate: a rate is
// never negative. Samples of containers and sandboxes the runtime no longer
// lists are dropped after each listing.
//
// # Host duties
//
//  1. Pass the CRI RuntimeService (k8s.io/cri-client) as Config.Runtime.
//  2. Describe the node: NodeName, NodeFsPath (the kubelet's root
//     directory), ImageFsPath and ContainerFsPath when the runtime keeps
//     them elsewhere, PodLogsDir, PodVolumes (volumes.Manager.Usage),
//     AllocatableMemory, and the cgroups of the runtime and of the pods
//     (PodsCgroup: "/kubepods" with the cgroupfs driver, "/kubepods.slice"
//     with systemd; the pods' and containers' cgroups are found below it,
//     for their pressure and the pods' network namespaces).
//  3. Hand the Provider to eviction.Config.Summary and
//     kubeletapi.Config.Summary; both accept it as is. There is nothing to
//     run or stop.
//  4. Register a Collector over it on the registry served at /metrics,
//     with a Context that lives as long as the host.
//
// In code:
//
//	p, err := stats.New(stats.Config{
//		NodeName:          nodeName,
//		NodeFsPath:        "/var/lib/kubelet",
//		Runtime:           runtimeService, // cri-client
//		PodLogsDir:        "/var/log/pods",
//		PodVolumes:        podVolumeUsage,
//		AllocatableMemory: allocatable.Memory().Value(),
//		RuntimeCgroup:     "/system.slice/containerd.service",
//		PodsCgroup:        "/kubepods.slice",
//	})
//	if err != nil {
//		return err
//	}
//	evict, err := eviction.New(eviction.Config{Summary: p, ...})
//	api, err := kubeletapi.New(kubeletapi.Config{Summary: p, ...})
//	c, err := stats.NewCollector(stats.CollectorConfig{Summary: p, Context: ctx})
//	registry.MustRegister(c)
//
// This package imports no other nodekit block; statstest has a fake
// runtime.
//
// # Differences from upstream kubelet v1.36
//
//   - No cadvisor: no housekeeping goroutine, no cache of container info;
//     each call reads a few dozen small files and four CRI lists. Pod and
//     container figures come from the CRI only, as with the
//     PodAndContainerStatsFromCRI feature gate (upstream's default takes
//     pod CPU, memory and network from cadvisor's cgroup data). A runtime
//     whose ListPodSandboxStats fails for any reason (not only
//     Unimplemented) is read through ListContainerStats instead, with pod
//     CPU and memory summed from the containers.
//   - Where the root cgroup has no memory figures, the node's usage is
//     MemTotal − MemFree and its working set MemTotal − MemAvailable from
//     /proc/meminfo (upstream then has no node memory). Node swap is
//     SwapTotal − SwapFree, reported (as zeros) without swap too, as
//     upstream's.
//   - usageNanoCores: upstream advances its CPU cache only from the
//     eviction manager's calls and computes no rate for sandbox counters;
//     here every caller advances it over windows of at least
//     CPUSampleInterval, sandbox counters get rates, and samples of vanished
//     containers are dropped at once (upstream: after 10 minutes). The pod
//     rate summed from containers is reported only when every container has
//     one (upstream sums missing rates as zero).
//   - Pod swap is summed from the containers in Get too (upstream's CRI
//     Get reports none). CRI sections a runtime omits are zeros timestamped
//     by the injected clock, as upstream's are by the real one.
//   - System containers: the kubelet's own cgroup is found from
//     /proc/self/cgroup on every call (upstream: a periodic task); "runtime"
//     and "misc" need their cgroups configured, as upstream; "pods" needs
//     PodsCgroup (upstream takes the pod cgroup root itself), and without it
//     falls back to the pods' summed working set when AllocatableMemory is
//     set. They are listed in a fixed order. Their start time is the cgroup
//     directory's age, as cadvisor's, but never before boot.
//   - The node's start time is the boot time in GetCPUAndMemoryStats too
//     (upstream: the root cgroup's creation time). Its network is every
//     interface of /proc/1/net/dev but loopback, veths and docker/nerdctl
//     bridges, eth0 as the default one, as cadvisor's; reported even on a
//     machine where cadvisor sees no physical device.
//   - Writable layers, logs and local ephemeral storage carry the capacity
//     of the configured container and node filesystems (statfs), not of the
//     device cadvisor finds for the runtime's filesystem ID. The pod's
//     /etc/hosts file is not counted in its ephemeral storage.
//   - A volume's filesystem figures (capacity, available, inodes, inodes
//     free) are left out when the host does not know them (upstream reports
//     zeros). Volumes are listed in the order PodVolumes gives (upstream:
//     local ephemeral ones first).
//   - The Collector reads one summary per scrape for all eight families
//     (upstream's two collectors read the pod stats once each), so the
//     logs and volumes it reports are of one moment; a figure the summary
//     lacks is left out rather than dereferenced. Like upstream's, it waits
//     for the summary in the scraping goroutine with no deadline of its
//     own: CollectorConfig.Context, the Provider's CRI calls and
//     volumes.Manager's bounded statfs keep it from hanging.
//   - PSI of pods and containers: the runtime's where it reports it, else
//     the cgroup's. Upstream's default (cadvisor-backed) CRI provider
//     prefers cadvisor's cgroup figures and its PodAndContainerStatsFromCRI
//     path takes only the runtime's; both read the same cgroups. Without
//     PodsCgroup, or for a cgroup not found there, a pod or container has
//     only the runtime's pressure (upstream: cadvisor's, when it knows the
//     cgroup). A pod's IO object without the runtime's or its cgroup's is
//     timed as its newest container's (upstream: its first container's).
//   - Pod interfaces: upstream's default provider lists the sandbox's
//     network namespace from cadvisor, eth0 as the top level, also for a
//     host-network pod (whose namespace is the host's); so does this one
//     when the sandbox's cgroup and process are found, but keeps the
//     runtime's default interface and time at the top level. Without them
//     the runtime's default interface comes first in the list (the CRI
//     lists the others apart; upstream's CRI path copies only those).
//   - Not reported: accelerators, user-defined metrics, per-container
//     process counts (the sandbox's count is), Windows.
package stats
