// Package podworkers runs one worker per pod and drives each pod through the
// kubelet's lifecycle: syncing, terminating, terminated and finished.
//
// Updates to a pod are serialized and coalesced (only the latest pending
// update is kept, a termination request is never lost), grace periods only
// ever shorten, resyncs and error backoff run on an injected clock, and
// static pods sharing a full name run one at a time. The host program
// supplies the runtime work through a Syncer.
//
// # Model
//
// Each pod UID has a small record. UpdatePod stores the update as the pod's
// pending update (replacing an older one) and makes sure the pod has an
// owner; it never waits for a sync. A pod is owned by at most one goroutine
// at a time, so the Syncer is never called twice at once for one UID. While
// Run is active an owner is a goroutine started for the pod (up to
// MaxConcurrentSyncs, unlimited by default); it exits as soon as the pod has
// no pending work, so an idle pod costs its record only. ProcessPending
// does the same work in the caller's goroutine.
//
// The record keeps the pod of its last update, as the kubelet does. A host
// with very many pods that keeps them in a compact form can set
// Config.LookupPod: an idle running pod's record then keeps only its name
// and termination grace period, and the workers ask the host for the pod when they
// next need it without being handed one.
//
// Before each sync of a pod with config the worker calls the StatusBarrier
// (the PLEG cache's WaitNewerThan) so the Syncer sees runtime status newer
// than its previous sync. Then, by state:
//
//	syncing      SyncPod(updateType, pod, mirrorPod) until it reports terminal
//	             or termination is requested (deletion, phase Succeeded or
//	             Failed, UpdateKill, orphaned by SyncKnownPods)
//	terminating  SyncTerminatingPod(pod, gracePeriod, statusFn) until nil,
//	             or SyncTerminatingRuntimePod for a pod with no config
//	terminated   SyncTerminatedPod(pod) until nil
//	finished     nothing; updates are ignored until SyncKnownPods forgets
//	             the pod
//
// A phase change runs the next phase at once. A kill, or a shorter grace
// period, cancels the sync in flight. The grace period is the minimum of
// every deletion grace period and kill override seen, else the pod's
// terminationGracePeriodSeconds, and never less than 1s unless a kill sets
// Force. After a successful sync the pod is due again after ResyncInterval
// (1m) plus up to 50% jitter, after a failure or a Syncer panic after
// BackOffPeriod (10s) plus up to 50%, both on Config.Clock.
//
// # Host duties
//
//  1. Implement Syncer; make every method honour ctx cancellation.
//  2. Build Workers with New, passing the PLEG cache's freshness barrier as
//     StatusBarrier, and call Run in a goroutine (or ProcessPending from
//     your own loop).
//  3. Send every config change with UpdatePod: UpdateCreate, UpdateUpdate,
//     a pod with a deletion timestamp for graceful deletion, and
//     UpdateKill with KillOptions for evictions and other kills.
//  4. Poll DuePods from the sync loop (every second) and send an
//     UpdateSync with the latest pod for each due UID, or call Resync for
//     one no longer in config.
//  5. Run housekeeping (every 2s): call SyncKnownPods with the desired UIDs;
//     send UpdateCreate for desired pods missing from its result; kill
//     runtime pods with no config using a RuntimePod.
//  6. Gate other subsystems on the query methods
//     (ShouldPodContainersBeTerminating, ShouldPodRuntimeBeRemoved,
//     ShouldPodContentBeRemoved, ...).
//  7. Cancel Run's context to stop: syncs in flight are cancelled, Run
//     returns when every worker goroutine has, and unfinished work is kept.
//
// # Metrics
//
// With Config.Registerer set, the workers register, under upstream's
// names, help and buckets:
//
//   - kubelet_pod_worker_duration_seconds{operation_type}: from an
//     update's StartTime to the end of the sync that realised it, by
//     update type (create, update, sync, kill), "terminated" for the
//     final SyncTerminatedPod.
//   - kubelet_pod_worker_start_duration_seconds: from the pod's first
//     sighting (its kubernetes.io/config.seen annotation, else the
//     update's StartTime) to the start of its first SyncPod (a create).
//   - kubelet_containers_per_pod_count: the containers of each pod a
//     worker starts (buckets 1, 2, 4, 8, 16).
//   - nodekit_pod_worker_syncer_panics_total: Syncer panics recovered.
//
// # Testing
//
// Package podworkerstest has a recording, scriptable Syncer (errors,
// terminal pods, calls held in flight) and a StatusBarrier; with a FakeClock
// and ProcessPending a test drives pods through their lifecycle without
// goroutines or sleeps.
//
// # Differences from upstream
//
//   - No per-pod goroutine or channel while a pod is idle; workers come and
//     go with work, and Run leaves none behind. Upstream keeps a goroutine
//     and channel per pod until it is finished and cannot be shut down.
//   - A Syncer panic is recovered and retried after the backoff instead of
//     crashing the worker (upstream's HandleCrash ends the pod's goroutine
//     and strands the pod).
//   - KillOptions.Completed is closed on every path, including kills of
//     finished pods and pods forgotten before they started (upstream leaves
//     some open, so killPodNow times out).
//   - The status barrier returns no status: the Syncer reads the runtime
//     status from its own cache, which the barrier made fresh. There is no
//     first-sight shortcut for pods already terminal in the runtime after a
//     restart; they go through SyncTerminatingPod, which should find
//     nothing running.
//   - SyncPod returns no post-sync func, and ctx is per call (cancelled when
//     the call returns) rather than reused across syncs.
//   - A terminating pod with no terminationGracePeriodSeconds gets the API
//     default of 30s instead of 1s; KillOptions.Force can force 0s.
//   - Eviction is recorded for a kill with Evict even if the pod was
//     already terminating (for example being deleted).
//   - An orphan that SyncKnownPods moves to terminating has its SyncPod in
//     flight cancelled, like any other termination request.
//   - A static pod waiting for its full name starts as soon as the previous
//     one finishes instead of after the next backoff; pods due for a phase
//     change or finished leave the work queue, which DuePods drains using
//     "due at or before now".
//   - kubelet_pod_worker_start_duration_seconds is recorded by the
//     workers as a create's SyncPod starts (upstream records it inside the
//     kubelet's SyncPod), and falls back to the update's StartTime when
//     the pod has no config.seen annotation (upstream records nothing).
//   - Instead of special backoffs for network-not-ready errors, a Syncer
//     error may implement RetryAfter to be retried sooner (or later) than
//     BackOffPeriod; there is no in-place resize hook.
package podworkers
