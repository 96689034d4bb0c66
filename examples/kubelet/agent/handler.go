package agent

import (
	"context"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/admission"
	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/podworkers"
	"github.com/nodekit/nodekit/syncloop"
)

var _ syncloop.Handler = (*Agent)(nil)

// HandlePodAdditions admits new pods and starts their workers, oldest first.
func (a *Agent) HandlePodAdditions(ctx context.Context, pods []*v1.Pod) {
	pods = slices.Clone(pods) // the loop's slice is not ours to reorder
	sort.Slice(pods, func(i, j int) bool { return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp) })
	for _, pod := range pods {
		if kubetypes.IsMirror(pod) {
			a.setMirror(pod)
			continue
		}
		others := a.activePods() // before this pod joins them
		a.storePod(pod)
		if res := a.admit.Admit(ctx, admission.Attributes{Pod: pod, OtherPods: others}); !res.Admit {
			klog.FromContext(ctx).Info("Pod rejected", "pod", klog.KObj(pod), "reason", res.Reason, "message", res.Message)
			a.pods.Reject(pod.UID)
			a.recorder.Event(pod, v1.EventTypeWarning, res.Reason, res.Message)
			a.reject(ctx, pod, res.Reason, res.Message)
			continue
		}
		if kubetypes.IsStatic(pod) {
			a.ensureMirror(ctx, pod)
		}
		if err := a.probes.AddPod(pod); err != nil {
			a.recorder.Event(pod, v1.EventTypeWarning, "Unhealthy", err.Error())
		}
		a.update(ctx, podworkers.UpdateCreate, pod)
	}
}

// reject fails a pod that admission refused.
func (a *Agent) reject(ctx context.Context, pod *v1.Pod, reason, message string) {
	a.syncer.Reject(pod, reason, message)
}

// HandlePodUpdates passes changes (including graceful deletions) to the
// pod's worker.
func (a *Agent) HandlePodUpdates(ctx context.Context, pods []*v1.Pod) {
	for _, pod := range pods {
		if kubetypes.IsMirror(pod) {
			a.setMirror(pod)
			continue
		}
		a.storePod(pod)
		a.update(ctx, podworkers.UpdateUpdate, pod)
	}
}

// HandlePodRemoves kills pods gone from their source.
func (a *Agent) HandlePodRemoves(ctx context.Context, pods []*v1.Pod) {
	for _, pod := range pods {
		if kubetypes.IsMirror(pod) {
			a.pods.RemoveMirror(pod)
			continue
		}
		a.pods.Remove(pod.UID)
		a.probes.RemovePod(pod)
		a.update(ctx, podworkers.UpdateKill, pod)
	}
}

// HandlePodReconcile records status changes made at the source; a pod
// with readiness gates is synced, since a gate's condition may have
// changed its readiness.
func (a *Agent) HandlePodReconcile(ctx context.Context, pods []*v1.Pod) {
	for _, pod := range pods {
		if kubetypes.IsMirror(pod) {
			a.setMirror(pod)
			continue
		}
		a.storePod(pod)
		if len(pod.Spec.ReadinessGates) > 0 && !a.rejectedPod(pod.UID) {
			a.update(ctx, podworkers.UpdateSync, pod)
		}
	}
}

func (a *Agent) rejectedPod(uid types.UID) bool { return a.pods.Rejected(uid) }

// HandlePodSyncs sends a sync to each pod's worker.
func (a *Agent) HandlePodSyncs(ctx context.Context, pods []*v1.Pod) {
	for _, pod := range pods {
		if p, ok := a.podByUID(pod.UID); ok {
			pod = p
		}
		a.update(ctx, podworkers.UpdateSync, pod)
	}
}

// HandlePodCleanups is housekeeping: reconcile workers with desired pods,
// restart missing ones, stop probing removed ones and kill runtime pods
// that have no config.
func (a *Agent) HandlePodCleanups(ctx context.Context) error {
	desired := a.pods.Desired() // without pods failed by admission: nothing to run or clean up
	desiredSet := sets.New(desired...)
	known := a.workers.SyncKnownPods(ctx, desiredSet)
	for _, uid := range desired {
		p, ok := a.podByUID(uid)
		if !ok {
			continue
		}
		if _, ok := known[uid]; !ok {
			a.update(ctx, podworkers.UpdateCreate, p)
		}
		if kubetypes.IsStatic(p) {
			a.ensureMirror(ctx, p) // retried until the Node exists to own it
		}
	}
	if a.client != nil {
		for _, mirror := range a.pods.OrphanedMirrors() {
			// Its static pod is gone; once that pod has stopped (its final
			// status goes to the mirror), the mirror goes too.
			if !a.workers.IsPodForMirrorPodTerminatingByFullName(kubetypes.FullName(mirror)) {
				a.deleteMirror(ctx, mirror)
			}
		}
	}
	a.probes.CleanupPods(desiredSet)
	a.statusMgr.RemoveOrphans(func(uid types.UID) bool {
		_, k := known[uid]
		_, p := a.podByUID(uid)
		return k || p
	})
	sbs, err := a.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return err
	}
	for _, sb := range sbs {
		uid := types.UID(sb.GetMetadata().GetUid())
		if _, ok := known[uid]; ok {
			continue
		}
		if _, ok := desiredSet[uid]; ok {
			continue
		}
		if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			// A finished pod's sandbox, kept for its logs until the pod
			// was deleted: it goes now, with its containers.
			if err := a.rt.RemovePodSandbox(ctx, sb.Id); err != nil {
				klog.FromContext(ctx).Error(err, "Remove sandbox of deleted pod", "uid", uid)
			}
			continue
		}
		rp := &podworkers.RuntimePod{UID: uid, Name: sb.Metadata.Name, Namespace: sb.Metadata.Namespace}
		if err := a.workers.UpdatePod(ctx, podworkers.Update{Type: podworkers.UpdateKill, RunningPod: rp}); err != nil {
			klog.FromContext(ctx).Error(err, "Kill orphaned runtime pod", "uid", uid)
		}
	}
	// Volumes of pods nobody knows any more (an agent stopped before
	// tearing them down) and the runtime holds nothing of. The loop calls
	// HandlePodCleanups only once every source has said what it wants.
	inRuntime := map[types.UID]bool{}
	for _, sb := range sbs {
		inRuntime[types.UID(sb.GetMetadata().GetUid())] = true
	}
	keep := func(uid types.UID) bool {
		_, d := desiredSet[uid]
		_, k := known[uid]
		return d || k || inRuntime[uid]
	}
	if err := a.volumes.CleanupOrphans(ctx, keep); err != nil {
		klog.FromContext(ctx).Error(err, "Clean up orphaned pod volumes")
	}
	a.cleanupCgroups(ctx, keep)
	if a.containerGCDue() {
		if err := a.collectContainers(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "Container GC")
		}
	}
	return nil
}

// cleanupCgroups removes the cgroups of pods that are gone (their
// stragglers killed) and sizes the QoS tiers for the pods that remain.
func (a *Agent) cleanupCgroups(ctx context.Context, keep func(types.UID) bool) {
	if a.cgroups == nil {
		return
	}
	logger := klog.FromContext(ctx)
	if err := a.cgroups.UpdateQoS(a.activePods()); err != nil {
		logger.Error(err, "Update QoS cgroups")
	}
	pods, err := a.cgroups.Pods()
	if err != nil {
		logger.Error(err, "List pod cgroups")
		return
	}
	for uid, cg := range pods {
		if keep(uid) {
			continue
		}
		if err := a.cgroups.Destroy(ctx, cg); err != nil {
			logger.V(2).Info("Pod cgroup not removed yet", "uid", uid, "err", err)
		}
	}
}

func (a *Agent) update(ctx context.Context, t podworkers.UpdateType, pod *v1.Pod) {
	err := a.workers.UpdatePod(ctx, podworkers.Update{Type: t, Pod: pod, MirrorPod: a.mirrorOf(pod), StartTime: a.opts.Clock.Now()})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Pod update refused", "pod", klog.KObj(pod))
	}
}

func (a *Agent) storePod(pod *v1.Pod) { a.pods.Set(pod) }

func (a *Agent) setMirror(pod *v1.Pod) { a.pods.SetMirror(pod) }

func (a *Agent) mirrorOf(pod *v1.Pod) *v1.Pod {
	if !kubetypes.IsStatic(pod) {
		return nil
	}
	return a.pods.MirrorOf(pod)
}

// ensureMirror keeps the API-visible mirror of a static pod: same name
// and spec, the mirror annotation (the static pod's config hash), owned by
// the Node. A mirror of another version of the pod (the manifest was
// edited: a new hash) or one being deleted is deleted first, as the
// kubelet does, and made again.
func (a *Agent) ensureMirror(ctx context.Context, pod *v1.Pod) {
	if a.client == nil || a.nodeStatus.Node() == nil {
		return
	}
	if old := a.mirrorOf(pod); old != nil {
		if old.DeletionTimestamp == nil && kubetypes.IsMirrorOf(old, pod) {
			return
		}
		// The previous version's final status goes to its mirror: wait
		// until it stopped (static pods of one full name run one at a time).
		if a.workers.IsPodForMirrorPodTerminatingByFullName(kubetypes.FullName(pod)) || !a.deleteMirror(ctx, old) {
			return
		}
	}
	m := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, Labels: pod.Labels,
		Annotations: map[string]string{}}, Spec: *pod.Spec.DeepCopy()}
	for k, v := range pod.Annotations {
		m.Annotations[k] = v
	}
	m.Annotations[syncloop.ConfigMirrorAnnotationKey] = pod.Annotations[syncloop.ConfigHashAnnotationKey]
	node := a.nodeStatus.Node()
	ctrl := true
	m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: &ctrl}}
	created, err := a.client.CoreV1().Pods(pod.Namespace).Create(ctx, m, metav1.CreateOptions{})
	switch {
	case err == nil:
		a.setMirror(created)
	case apierrors.IsAlreadyExists(err):
		klog.FromContext(ctx).V(2).Info("Mirror pod exists already; waiting for it to be seen", "pod", klog.KObj(pod))
	default:
		klog.FromContext(ctx).Error(err, "Failed creating a mirror pod", "pod", klog.KObj(pod))
	}
}

// deleteMirror deletes a mirror pod at once (grace period 0, only that
// instance: a UID precondition) and forgets it; false if the API server
// refused, or if another mirror replaced it (a conflict: its informer
// update will tell).
func (a *Agent) deleteMirror(ctx context.Context, mirror *v1.Pod) bool {
	zero := int64(0)
	err := a.client.CoreV1().Pods(mirror.Namespace).Delete(ctx, mirror.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
		Preconditions: &metav1.Preconditions{UID: &mirror.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Error(err, "Failed deleting a mirror pod", "pod", klog.KObj(mirror))
		return false
	}
	klog.FromContext(ctx).V(2).Info("Deleted mirror pod", "pod", klog.KObj(mirror), "uid", mirror.UID)
	a.pods.RemoveMirror(mirror)
	return true
}
