package podhandler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/admission"
	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/podmanager"
	"github.com/nodekit/nodekit/podworkers"
)

// ErrInvalidConfig wraps every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("podhandler: invalid config")

// Admitter decides whether a pod may run beside the others; an
// admission.Chain implements it.
type Admitter interface {
	Admit(ctx context.Context, attrs admission.Attributes) admission.Result
}

// Rejecter gives a pod admission refused its final status (Failed with
// the refusal's reason and message); *podsyncer.Syncer implements it.
type Rejecter interface {
	Reject(ctx context.Context, pod *v1.Pod, reason, message string)
}

// Probes is the prober as the handler drives it; *prober.Manager
// implements it.
type Probes interface {
	AddPod(pod *v1.Pod) error
	RemovePod(pod *v1.Pod)
	CleanupPods(desired sets.Set[types.UID])
}

// Statuses forgets the statuses of pods nobody knows any more;
// *podstatus.Manager implements it.
type Statuses interface {
	RemoveOrphans(keep func(types.UID) bool)
}

// Sandboxes is the part of a CRI runtime housekeeping uses to find pods
// that run without config; a criapi.RuntimeService implements it.
type Sandboxes interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	RemovePodSandbox(ctx context.Context, id string) error
}

// OrphanCleaner removes what pods left on the node once neither config,
// workers nor runtime know them (keep false); *volumes.Manager implements
// it.
type OrphanCleaner interface {
	CleanupOrphans(ctx context.Context, keep func(types.UID) bool) error
}

// NodeGetter returns the registered Node, nil until it is;
// *nodestatus.Controller implements it.
type NodeGetter interface {
	Node() *v1.Node
}

// Deadlines tells whether a pod ran past its activeDeadlineSeconds;
// *podsyncer.Syncer implements it.
type Deadlines interface {
	PastDeadline(pod *v1.Pod) bool
}

// Workers runs pods, one worker each, as the handler drives them;
// *podworkers.Workers implements it.
type Workers interface {
	// UpdatePod hands the pod's worker an update.
	UpdatePod(ctx context.Context, u podworkers.Update) error
	// Resync asks for the pod's periodic sync now.
	Resync(uid types.UID) error
	// DuePods are the pods whose periodic sync is due.
	DuePods() []types.UID
	// SyncKnownPods forgets the workers of pods neither desired nor
	// running and reports the rest.
	SyncKnownPods(ctx context.Context, desired sets.Set[types.UID]) map[types.UID]podworkers.WorkerSync
	// IsPodKnownTerminated, IsPodTerminationRequested and
	// IsPodForMirrorPodTerminatingByFullName report a worker's state.
	IsPodKnownTerminated(uid types.UID) bool
	IsPodTerminationRequested(uid types.UID) bool
	IsPodForMirrorPodTerminatingByFullName(fullName string) bool
}

// PodStore records the desired pods, the refused ones and static pods'
// mirrors; *podmanager.Manager implements it (podmanager.New is the
// default).
type PodStore interface {
	Set(pod *v1.Pod)
	Get(uid types.UID) (*v1.Pod, bool)
	Remove(uid types.UID)
	// Pods are the desired pods; Desired their UIDs.
	Pods() []*v1.Pod
	Desired() []types.UID
	// Active are the pods that may hold resources: not rejected, not in
	// a terminal phase, not known terminated.
	Active(terminated func(types.UID) bool) []*v1.Pod
	Reject(uid types.UID)
	Rejected(uid types.UID) bool
	SetMirror(mirror *v1.Pod)
	RemoveMirror(mirror *v1.Pod)
	MirrorOf(pod *v1.Pod) *v1.Pod
	// OrphanedMirrors are the mirrors without a static pod.
	OrphanedMirrors() []*v1.Pod
	MirrorCount() int
}

// Config configures a Handler. Workers is required.
type Config struct {
	// Workers runs the pods.
	Workers Workers
	// Pods records the desired pods; nil starts an empty one. Share it
	// with the kubelet API (pods by name).
	Pods PodStore
	// Admit decides on new pods; nil admits every pod.
	Admit Admitter
	// Reject sets the status of a refused pod; nil leaves it to the
	// event alone.
	Reject Rejecter
	// Probes starts and stops the pods' probes; nil: none.
	Probes Probes
	// Statuses forgets orphaned statuses in housekeeping; nil: none.
	Statuses Statuses
	// Runtime lets housekeeping kill pods that run without config and
	// remove the sandboxes of deleted pods; nil skips it.
	Runtime Sandboxes
	// Orphans run at the end of housekeeping (volumes, cgroups...).
	Orphans []OrphanCleaner
	// Deadlines makes PodsToSync sync a pod past its deadline at once;
	// nil: at its next periodic sync.
	Deadlines Deadlines
	// MirrorClient creates and deletes static pods' mirror pods in the
	// API, owned by Node; nil (standalone) keeps no mirrors.
	MirrorClient typedcorev1.PodsGetter
	Node         NodeGetter
	// Recorder receives admission refusals; nil drops them.
	Recorder record.EventRecorder
	// Clock stamps updates; nil means the real clock.
	Clock clock.PassiveClock
	// Registerer receives the kubelet's housekeeping metrics (see the
	// package doc); nil: none. A registry that has them already is
	// refused by New.
	Registerer prometheus.Registerer
}

// Handler is a syncloop.Handler over podworkers: it records pods in a pod
// manager, admits new ones, keeps static pods' mirrors, feeds the prober,
// and does the kubelet's housekeeping. Build it with New.
type Handler struct {
	cfg     Config
	pods    PodStore
	metrics *metrics
}

// New validates cfg and returns a Handler; no I/O.
func New(cfg Config) (*Handler, error) {
	if cfg.Workers == nil {
		return nil, fmt.Errorf("%w: Workers is required", ErrInvalidConfig)
	}
	if len(cfg.Orphans) > 0 && cfg.Runtime == nil {
		// Without the runtime's view, the volumes of a pod whose
		// containers still run would look orphaned.
		return nil, fmt.Errorf("%w: Orphans need Runtime", ErrInvalidConfig)
	}
	if (cfg.MirrorClient == nil) != (cfg.Node == nil) {
		return nil, fmt.Errorf("%w: MirrorClient and Node go together (both or neither)", ErrInvalidConfig)
	}
	if cfg.Pods == nil {
		cfg.Pods = podmanager.New()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Handler{cfg: cfg, pods: cfg.Pods, metrics: m}, nil
}

// Pods is the handler's pod manager.
func (h *Handler) Pods() PodStore { return h.pods }

// PodByUID is the pod of config with that UID (syncloop.Config.PodByUID).
func (h *Handler) PodByUID(uid types.UID) (*v1.Pod, bool) { return h.pods.Get(uid) }

// ActivePods are the pods admitted to this node that may still hold
// resources, as the kubelet's GetActivePods: not rejected, not in a
// terminal phase, not known terminated (a terminating pod is active).
func (h *Handler) ActivePods() []*v1.Pod {
	return h.pods.Active(h.cfg.Workers.IsPodKnownTerminated)
}

// HandlePodAdditions admits new pods and starts their workers, oldest
// first, each judged beside the pods admitted before it.
func (h *Handler) HandlePodAdditions(ctx context.Context, pods []*v1.Pod) {
	pods = slices.Clone(pods) // the loop's slice is not ours to reorder
	sort.SliceStable(pods, func(i, j int) bool { return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp) })
	for _, pod := range pods {
		if kubetypes.IsMirror(pod) {
			h.pods.SetMirror(pod)
			continue
		}
		others := h.ActivePods() // before this pod joins them
		h.pods.Set(pod)
		if h.cfg.Admit != nil {
			if res := h.cfg.Admit.Admit(ctx, admission.Attributes{Pod: pod, OtherPods: others}); !res.Admit {
				klog.FromContext(ctx).Info("Pod rejected", "pod", klog.KObj(pod), "reason", res.Reason, "message", res.Message)
				h.pods.Reject(pod.UID)
				if h.cfg.Recorder != nil {
					h.cfg.Recorder.Event(pod, v1.EventTypeWarning, res.Reason, res.Message)
				}
				if h.cfg.Reject != nil {
					h.cfg.Reject.Reject(ctx, pod, res.Reason, res.Message)
				}
				continue
			}
		}
		if kubetypes.IsStatic(pod) {
			h.ensureMirror(ctx, pod)
		}
		if h.cfg.Probes != nil {
			if err := h.cfg.Probes.AddPod(pod); err != nil && h.cfg.Recorder != nil {
				h.cfg.Recorder.Event(pod, v1.EventTypeWarning, "Unhealthy", err.Error())
			}
		}
		h.update(ctx, podworkers.UpdateCreate, pod)
	}
}

// HandlePodUpdates passes changes (graceful deletions among them) to the
// pod's worker.
func (h *Handler) HandlePodUpdates(ctx context.Context, pods []*v1.Pod) {
	for _, pod := range pods {
		if kubetypes.IsMirror(pod) {
			h.pods.SetMirror(pod)
			continue
		}
		h.pods.Set(pod)
		h.update(ctx, podworkers.UpdateUpdate, pod)
	}
}

// HandlePodRemoves kills pods gone from their source.
func (h *Handler) HandlePodRemoves(ctx context.Context, pods []*v1.Pod) {
	for _, pod := range pods {
		if kubetypes.IsMirror(pod) {
			h.pods.RemoveMirror(pod)
			continue
		}
		h.pods.Remove(pod.UID)
		if h.cfg.Probes != nil {
			h.cfg.Probes.RemovePod(pod)
		}
		h.update(ctx, podworkers.UpdateKill, pod)
	}
}

// HandlePodReconcile records status changes made at the source; a pod
// with readiness gates is synced, since a gate's condition may have
// changed its readiness.
func (h *Handler) HandlePodReconcile(ctx context.Context, pods []*v1.Pod) {
	for _, pod := range pods {
		if kubetypes.IsMirror(pod) {
			h.pods.SetMirror(pod)
			continue
		}
		h.pods.Set(pod)
		if len(pod.Spec.ReadinessGates) > 0 && !h.pods.Rejected(pod.UID) {
			h.update(ctx, podworkers.UpdateSync, pod)
		}
	}
}

// HandlePodSyncs sends a sync to each pod's worker, with the pod as
// config has it now.
func (h *Handler) HandlePodSyncs(ctx context.Context, pods []*v1.Pod) {
	for _, pod := range pods {
		if p, ok := h.pods.Get(pod.UID); ok {
			pod = p
		}
		h.update(ctx, podworkers.UpdateSync, pod)
	}
}

// PodsToSync returns the pods whose resync or retry is due, and those past
// their activeDeadlineSeconds (synced at once, and failed); due pods no
// longer in config are resynced with their last known state
// (syncloop.Config.PodsToSync).
func (h *Handler) PodsToSync() []types.UID {
	var out []types.UID
	due := map[types.UID]bool{}
	for _, uid := range h.cfg.Workers.DuePods() {
		if _, ok := h.pods.Get(uid); ok {
			out = append(out, uid)
			due[uid] = true
		} else {
			_ = h.cfg.Workers.Resync(uid)
		}
	}
	if h.cfg.Deadlines == nil {
		return out
	}
	for _, p := range h.ActivePods() {
		if !due[p.UID] && p.Spec.ActiveDeadlineSeconds != nil && !h.cfg.Workers.IsPodTerminationRequested(p.UID) && h.cfg.Deadlines.PastDeadline(p) {
			out = append(out, p.UID)
		}
	}
	return out
}

func (h *Handler) update(ctx context.Context, t podworkers.UpdateType, pod *v1.Pod) {
	err := h.cfg.Workers.UpdatePod(ctx, podworkers.Update{Type: t, Pod: pod, MirrorPod: h.mirrorOf(pod), StartTime: h.cfg.Clock.Now()})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Pod update refused", "pod", klog.KObj(pod))
	}
}

func (h *Handler) mirrorOf(pod *v1.Pod) *v1.Pod {
	if !kubetypes.IsStatic(pod) {
		return nil
	}
	return h.pods.MirrorOf(pod)
}

// ensureMirror keeps the API-visible mirror of a static pod: same name
// and spec, the mirror annotation (the static pod's config hash), owned by
// the Node. A mirror of another version of the pod (the manifest was
// edited: a new hash) or one being deleted is deleted first, as the
// kubelet does, and made again.
func (h *Handler) ensureMirror(ctx context.Context, pod *v1.Pod) {
	if h.cfg.MirrorClient == nil {
		return
	}
	node := h.cfg.Node.Node()
	if node == nil {
		return // retried by housekeeping once the Node exists to own it
	}
	if old := h.mirrorOf(pod); old != nil {
		if old.DeletionTimestamp == nil && kubetypes.IsMirrorOf(old, pod) {
			return
		}
		// The previous version's final status goes to its mirror: wait
		// until it stopped (static pods of one full name run one at a time).
		if h.cfg.Workers.IsPodForMirrorPodTerminatingByFullName(kubetypes.FullName(pod)) || !h.deleteMirror(ctx, old) {
			return
		}
	}
	m := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, Labels: pod.Labels,
		Annotations: map[string]string{}}, Spec: *pod.Spec.DeepCopy()}
	for k, v := range pod.Annotations {
		m.Annotations[k] = v
	}
	m.Annotations[kubetypes.ConfigMirrorAnnotationKey] = pod.Annotations[kubetypes.ConfigHashAnnotationKey]
	ctrl := true
	m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: &ctrl}}
	created, err := h.cfg.MirrorClient.Pods(pod.Namespace).Create(ctx, m, metav1.CreateOptions{})
	switch {
	case err == nil:
		h.pods.SetMirror(created)
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
func (h *Handler) deleteMirror(ctx context.Context, mirror *v1.Pod) bool {
	zero := int64(0)
	err := h.cfg.MirrorClient.Pods(mirror.Namespace).Delete(ctx, mirror.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
		Preconditions: &metav1.Preconditions{UID: &mirror.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Error(err, "Failed deleting a mirror pod", "pod", klog.KObj(mirror))
		return false
	}
	klog.FromContext(ctx).V(2).Info("Deleted mirror pod", "pod", klog.KObj(mirror), "uid", mirror.UID)
	h.pods.RemoveMirror(mirror)
	return true
}
