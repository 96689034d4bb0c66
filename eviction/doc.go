// Package eviction implements node-pressure eviction: it observes resource
// usage signals (memory.available, allocatableMemory.available, nodefs.*,
// imagefs.*, containerfs.*, pid.available), compares them with hard and
// soft thresholds in the kubelet's flag syntax, reports pressure
// conditions, reclaims node-level resources first and then ranks pods and
// evicts one per pass through a host-supplied kill function.
//
// # Model
//
// [ParseThresholds] and [ParseThresholdFlags] turn kubelet configuration
// into [Threshold] values (upstream Linux defaults when no hard thresholds
// are given). A [Manager] built with [New] runs passes: [Manager.Synchronize]
// is the synchronous core, [Manager.Run] the loop around it. One pass
//
//  1. reads a stats/v1alpha1 Summary from the [SummaryProvider] and derives
//     [Observations] ([Observe]);
//  2. finds the thresholds met, keeping previously met ones until their
//     minimum reclaim is satisfied;
//  3. tracks soft thresholds' grace periods and the pressure conditions,
//     which stay true for PressureTransitionPeriod (5m) after their last
//     observation;
//  4. picks the starved resource (memory first), runs the node-level
//     reclaim functions for it (dead containers, unused images) and
//     re-observes; if that relieved every threshold, stops;
//  5. otherwise ranks the active pods ([RankForEviction]) and kills the
//     first one that is not critical ([IsCriticalPod]) with phase Failed,
//     reason Evicted and upstream's message ([EvictionMessage]); hard
//     thresholds use a 1s grace period, soft ones
//     min(MaxPodGracePeriodSeconds, terminationGracePeriodSeconds).
//
// Run passes every MonitoringInterval (10s) and at once on
// [Manager.Trigger], which [Notifier]s call. [PSINotifier] arms a Linux PSI
// trigger on /proc/pressure/memory (or a cgroup v2 memory.pressure file)
// and blocks in poll(2), so memory stalls start a pass within about a
// second without polling; where triggers are unavailable it logs why and
// degrades to polling every second. After an eviction Run waits for
// PodCleanedUp (up to 30s) and then passes again.
//
// The SummaryProvider of a real Linux host is the stats package's
// Provider (stats.New): node memory, filesystems and PID limits, and pod
// usage from CRI stats, with each container's logs, each pod's volumes and
// its local ephemeral storage as the kubelet counts them (what the emptyDir
// sizeLimit and ephemeral-storage limit evictions need). This package does
// not import it; any type with its Get method fits.
//
// # Host duties
//
//  1. Parse thresholds (ParseThresholdFlags or ParseThresholds) and build a
//     Manager with a SummaryProvider (a stats.Provider), ActivePods
//     (non-terminal pods bound to the node) and KillPod (ask the pod workers
//     to stop the pod with the given grace period after applying the status
//     update; block until it is stopped). Optionally give PodCleanedUp, DeleteUnusedContainers and
//     DeleteUnusedImages (image/container GC), a Recorder and a Registerer.
//  2. Add a PSINotifier (or any Notifier) for fast memory-pressure reaction.
//  3. Run the manager: go m.Run(ctx).
//  4. Feed m.IsUnderMemoryPressure, m.IsUnderDiskPressure and
//     m.IsUnderPIDPressure to the node status pressure condition setters.
//  5. Call m.Admit(pod) in pod admission and reject pods it refuses with its
//     Reason and Message.
//
// # Differences from upstream kubelet v1.36
//
//   - Run waits on the injected clock, honours ctx everywhere and leaves no
//     goroutine; errors are returned from Synchronize, not only logged.
//   - Fast reaction uses PSI triggers instead of cgroup v1 memory
//     usage-threshold eventfds (kernelMemcgNotification), and degrades to
//     polling with a log line; upstream polls every 10s by default.
//   - Validation is stricter and errors are precise: duplicate signals, an
//     operator other than "<", NaN or out-of-range percentages, and a soft
//     threshold with a zero grace period (upstream silently makes it hard)
//     are rejected. Thresholds carry no Operator field: every signal is
//     "less than".
//   - A pod over its local storage limits (emptyDir sizeLimit, pod and
//     container ephemeral-storage limits) is evicted one per pass (upstream
//     evicts all of them in one), with the kubelet's messages, grace period
//     and metric labels. Pod-level resources are always honoured (no
//     feature gate).
//   - The filesystem layout (DedicatedImageFs, SplitContainerFs) is
//     configuration, not probed through a DiskInfoProvider.
//   - Ranking and threshold ordering use stable sorts, so ties are decided
//     by the order of ActivePods rather than at random.
//   - Percentages are resolved with float32 precision exactly as upstream
//     does. (The memory figures themselves are the SummaryProvider's: see
//     the stats package for how its node working set differs.)
//   - The DisruptionTarget condition's LastTransitionTime comes from the
//     injected clock.
package eviction
