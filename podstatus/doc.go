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
package podstatus
