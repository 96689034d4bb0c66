// Package podhandler is the kubelet's pod-handling half of the sync loop
// as a block: a syncloop.Handler over podworkers. A host that runs pods
// with podworkers (a CRI agent with podsyncer, or its own Syncer) plugs it
// into syncloop instead of writing HandlePodAdditions and housekeeping
// itself.
//
// # Model
//
// Every pod the loop dispatches is recorded in a podmanager.Manager (mirror
// pods apart). New pods are admitted oldest first, each judged beside the
// pods admitted before it (Admitter: an admission.Chain); a refused pod gets
// an event and, through Rejecter, its Failed status, and never a worker.
// Admitted pods go to their worker (UpdateCreate), changes and graceful
// deletions follow (UpdateUpdate), removals kill (UpdateKill), a pod whose
// readiness gates may have changed is synced on RECONCILE, and the loop's
// syncs carry the pod as config has it now. Static pods get a mirror pod in
// the API owned by the Node; a mirror of another version of the pod (an
// edited manifest) is replaced once that version has stopped.
//
// HandlePodCleanups is housekeeping: workers are reconciled with the
// desired pods (a finished worker of a pod config still wants is restarted),
// orphaned mirrors are deleted once their static pod stopped, probes of
// removed pods stop, orphaned statuses are forgotten, pods that run without
// config are killed and the sandboxes of deleted pods removed, and then each
// OrphanCleaner (volumes, cgroups) removes what pods nobody knows left.
// PodsToSync feeds the loop's periodic syncs, pods past their
// activeDeadlineSeconds at once.
//
// # Metrics
//
// With Config.Registerer set, housekeeping sets the kubelet's families as
// the kubelet's HandlePodCleanups does, under upstream's names, help and
// labels: kubelet_desired_pods{static} (every pod config gives, refused
// ones included), kubelet_active_pods{static} (ActivePods),
// kubelet_mirror_pods (the mirrors recorded),
// kubelet_working_pods{lifecycle,config,static} (what the workers know
// after the pass: sync, terminating or terminated × desired, orphan or
// runtime_only, every valid combination reported),
// kubelet_restarted_pods_total{static} (desired pods the workers no
// longer knew, restarted: a reused UID) and
// kubelet_orphaned_runtime_pods_total (pods found running in the runtime
// that no worker knew, killed). static is "true" or empty, "unknown" for
// runtime_only. A registry that has them already is refused by New.
//
// # Host duties
//
// The host builds the podworkers.Workers (with its Syncer), passes the
// blocks it has as the small interfaces of Config (each optional but
// Workers), and gives the Handler, PodsToSync and PodByUID to
// syncloop.Config. Admission's others, eviction's active pods and cgroup
// sizing use ActivePods.
//
// Imports: podworkers, podmanager, admission (the Attributes and Result
// types) and kubetypes; the rest is interfaces. It implements
// syncloop.Handler without importing syncloop.
//
// # Differences from upstream
//
//   - Housekeeping removes a finished pod's sandbox (kept for its logs)
//     once the pod is deleted, instead of leaving it to container GC.
//   - Container GC is not part of housekeeping: containergc.Collector runs
//     on its own period, as upstream's StartGarbageCollection does.
package podhandler
