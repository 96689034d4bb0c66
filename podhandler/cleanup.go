package podhandler

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/podworkers"
)

// HandlePodCleanups is the kubelet's housekeeping: reconcile the workers
// with the desired pods (restarting a worker that finished for a pod
// config still wants), keep static pods' mirrors and delete orphaned ones,
// stop probing removed pods, forget orphaned statuses, kill pods that run
// without config and remove the sandboxes of deleted pods, then let each
// OrphanCleaner remove what pods nobody knows left behind. The sync loop
// calls it only once every source has said what it wants.
func (h *Handler) HandlePodCleanups(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	desired := h.pods.Desired() // without pods failed by admission: nothing to run or clean up
	desiredSet := sets.New(desired...)
	known := h.cfg.Workers.SyncKnownPods(ctx, desiredSet)
	// working is what the workers know after this pass, for the metrics:
	// known, with the restarts and orphans this pass adds (as upstream).
	working := make(map[types.UID]podworkers.WorkerSync, len(known))
	for uid, ws := range known {
		working[uid] = ws
	}
	var restarts, staticRestarts int
	for _, uid := range desired {
		p, ok := h.pods.Get(uid)
		if !ok {
			continue
		}
		if _, ok := known[uid]; !ok {
			// Unknown to the workers while config wants it: its UID was
			// reused (a static pod recreated) after its worker finished.
			h.update(ctx, podworkers.UpdateCreate, p)
			static := kubetypes.IsStatic(p)
			if terminal := p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed; !terminal {
				// A restart to the kubelet, which restarts active pods only.
				if static {
					staticRestarts++
				} else {
					restarts++
				}
			}
			working[uid] = podworkers.WorkerSync{State: podworkers.StateSyncing, HasConfig: true, Static: static}
		}
		if kubetypes.IsStatic(p) {
			h.ensureMirror(ctx, p) // retried until the Node exists to own it
		}
	}
	if h.cfg.MirrorClient != nil {
		for _, mirror := range h.pods.OrphanedMirrors() {
			// Its static pod is gone; once that pod has stopped (its final
			// status goes to the mirror), the mirror goes too.
			if !h.cfg.Workers.IsPodForMirrorPodTerminatingByFullName(kubetypes.FullName(mirror)) {
				h.deleteMirror(ctx, mirror)
			}
		}
	}
	h.metrics.pods(h.pods.Pods(), h.ActivePods(), h.pods.MirrorCount())
	h.metrics.restarts(restarts, staticRestarts)
	if h.cfg.Probes != nil {
		h.cfg.Probes.CleanupPods(desiredSet)
	}
	if h.cfg.Statuses != nil {
		h.cfg.Statuses.RemoveOrphans(func(uid types.UID) bool {
			_, k := known[uid]
			_, p := h.pods.Get(uid)
			return k || p
		})
	}
	inRuntime := map[types.UID]bool{}
	if h.cfg.Runtime != nil {
		sbs, err := h.cfg.Runtime.ListPodSandbox(ctx, nil)
		if err != nil {
			h.metrics.workers(working)
			return fmt.Errorf("housekeeping: list sandboxes: %w", err)
		}
		orphans := 0
		for _, sb := range sbs {
			uid := types.UID(sb.GetMetadata().GetUid())
			inRuntime[uid] = true
			if _, ok := known[uid]; ok || desiredSet.Has(uid) {
				continue
			}
			if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
				// A finished pod's sandbox, kept for its logs until the pod
				// was deleted: it goes now, with its containers.
				if err := h.cfg.Runtime.RemovePodSandbox(ctx, sb.Id); err != nil {
					logger.Error(err, "Remove sandbox of deleted pod", "uid", uid)
				}
				continue
			}
			rp := &podworkers.RuntimePod{UID: uid, Name: sb.Metadata.Name, Namespace: sb.Metadata.Namespace}
			if err := h.cfg.Workers.UpdatePod(ctx, podworkers.Update{Type: podworkers.UpdateKill, RunningPod: rp}); err != nil {
				logger.Error(err, "Kill orphaned runtime pod", "uid", uid)
			}
			if _, counted := working[uid]; !counted { // one pod, however many ready sandboxes
				orphans++
				working[uid] = podworkers.WorkerSync{State: podworkers.StateTerminating, Orphan: true}
			}
		}
		h.metrics.orphans(orphans)
	}
	h.metrics.workers(working)
	// What pods nobody knows any more left behind (an agent stopped before
	// tearing them down), unless the runtime still holds something of them.
	keep := func(uid types.UID) bool {
		_, k := known[uid]
		return desiredSet.Has(uid) || k || inRuntime[uid]
	}
	for _, c := range h.cfg.Orphans {
		if err := c.CleanupOrphans(ctx, keep); err != nil {
			logger.Error(err, "Clean up what orphaned pods left")
		}
	}
	return nil
}
