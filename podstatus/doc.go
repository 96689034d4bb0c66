// Package podstatus is a node agent's pod status manager, after the
// kubelet's: one cache of the latest status per pod, set by whoever knows
// something new (the pod syncer, the prober's readiness and startup results,
// eviction, termination), and written to the API server by the manager's own
// workers — never by a pod worker, so a pod blocked in a long image pull or
// stop still has its readiness reported.
//
// A write starts from the pod as the API server has it now, not from a
// cached copy: the kubelet's status is merged into it so that only what the
// kubelet owns changes (its conditions — PodReadyToStartContainers,
// Initialized, ContainersReady, Ready, PodScheduled, the resize conditions —
// and the fields it computes); conditions and fields others own (readiness
// gates, DisruptionTarget set by the control plane, resource claim statuses,
// nominatedNodeName) are kept as found. The patch carries the pod's UID as a
// precondition, so a pod deleted and recreated under the same name never
// receives the old pod's status. Terminal phases are final: once Succeeded or
// Failed is cached or found on the API server it is never replaced by a
// running phase, and a terminal phase is held back while the pod could still
// have running containers. A static pod's status goes to its mirror pod.
//
// Writes are coalesced (latest wins), run with bounded concurrency, retried
// with a backoff on the injected clock when the API server fails, and
// re-queued by a periodic resync: statuses set while the API server is away
// are written when it returns. A pod whose deletion the agent finishes gets
// its final status written first, then a zero-grace delete guarded by the
// UID.
//
// Every status set is completed as the kubelet's status manager completes
// it, so a host that builds statuses itself (a provider with no pod
// syncer) reports what the kubelet would: startTime set once and kept,
// the lastTransitionTime of the kubelet's conditions kept while their
// status holds and moved when it changes, observedGeneration, timestamps
// in whole seconds, container statuses in the API's order and termination
// messages within the pod's 12 KiB. What a caller sets is kept where it
// does not contradict the status before (podsyncer stamps the same times
// from the same clock). A status that changes nothing the kubelet owns is
// not written again.
//
// ReadyConditions computes ContainersReady and Ready (with readiness gates
// and upstream's messages); Merge is the pure merge used by the writer.
//
// # Host duties
//
// The host runs the Manager (Run), gives it the pod workers'
// CouldHaveRunningContainers, and sets statuses from its pod syncer
// (podsyncer builds them from the runtime), its prober's readiness and
// startup results (SetContainerReadiness, SetContainerStartup), eviction
// and admission refusals; Finish completes a graceful deletion and
// RemoveOrphans forgets pods nobody knows (podhandler's housekeeping).
// Without a client (standalone) statuses are kept and never written.
//
// # Differences from upstream
//
// Writes never run on a pod worker and are retried on the injected clock;
// a write merges into the API's current pod rather than a cached copy.
// Each difference below is deliberate; where it leaves a duty, the host has
// it.
//
//   - A condition whose status changed keeps the lastTransitionTime its
//     caller set (upstream stamps now), unless that is the old condition's
//     own: the caller may know better when it changed, and podsyncer's
//     times then agree with the cache's. Merge keeps the time the API
//     server already has for a Ready condition it turns False (upstream
//     stamps now on every write), so repeated writes agree.
//   - A ready or started result for a container the cached status shows
//     waiting or terminated is ignored: it outlived its container (upstream
//     records it until the next pod sync). Readiness changes after a
//     terminal phase are recorded, as upstream.
//   - TerminatePod does not complete a deletion: the host calls Finish once
//     its terminated-pod sync is done (upstream's podIsFinished).
//     TerminatePod judges whether the pod initialized from the latest
//     cached status, not from the pod object's, which may be stale.
//   - There is no pod manager: a static pod's status is kept and read under
//     the static pod's UID (PodStatus does not translate a mirror's UID),
//     and whether its mirror exists is asked of the API server, one get per
//     attempt.
//   - No periodic reconciliation against the API server's copy (upstream's
//     needsReconcile): the resync queues only statuses not yet written.
//     Each write merges into the API's current pod, so a field the kubelet
//     owns that someone else changed is put right at the pod's next status
//     change.
//   - A pod the API server no longer has is forgotten at once, not at the
//     next RemoveOrphans; a terminal phase once cached is final in the cache
//     too (upstream leaves that to its status builder).
//   - No check that a container leaves terminated only when its restart
//     policy allows it (upstream's checkContainerStateTransition, a guard
//     against its own status builder): the caller's duty.
//   - Resize conditions are the allocation block's; podsyncer adds them to
//     the status it sets.
package podstatus
