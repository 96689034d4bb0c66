package syncloop

import (
	"context"
	"reflect"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/kubetypes"
)

// eventFailedValidation is upstream's event reason for a pod config that
// fails validation.
const eventFailedValidation = "FailedValidation"

// merger keeps the last snapshot of every source and turns each new snapshot
// into the minimal ordered PodUpdates, like upstream's podStorage. It is safe
// for concurrent use; out is called with the updates of one snapshot while
// the merger's lock is held, so updates are delivered in order.
type merger struct {
	mu       sync.Mutex
	pods     map[string]map[types.UID]*v1.Pod
	seen     map[string]bool
	now      func() time.Time
	recorder record.EventRecorder
	out      func(updates []PodUpdate)
	// observe sees every pod of the API server source (Config.OnPodObserved).
	observe func(*v1.Pod)
}

func newMerger(now func() time.Time, recorder record.EventRecorder, out func([]PodUpdate)) *merger {
	return &merger{
		pods:     map[string]map[types.UID]*v1.Pod{},
		seen:     map[string]bool{},
		now:      now,
		recorder: recorder,
		out:      out,
	}
}

// set replaces the snapshot of source with pods and delivers the resulting
// updates: REMOVE, ADD, UPDATE, DELETE, then RECONCILE, each only if
// non-empty, plus an empty ADD the first time a source reports nothing new,
// so that its readiness is seen.
func (m *merger) set(ctx context.Context, source string, pods []*v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ups := m.diff(ctx, source, pods)
	if len(ups) > 0 {
		m.out(ups)
	}
}

func (m *merger) diff(ctx context.Context, source string, pods []*v1.Pod) []PodUpdate {
	logger := klog.FromContext(ctx)
	firstSet := !m.seen[source]
	m.seen[source] = true
	old := m.pods[source]
	cur := make(map[types.UID]*v1.Pod, len(pods))
	var adds, updates, deletes, removes, reconciles []*v1.Pod
	type fullName struct{ name, namespace string }
	names := make(map[fullName]struct{}, len(pods))
	for _, ref := range pods {
		full := fullName{ref.Name, ref.Namespace}
		if _, dup := names[full]; dup {
			logger.Info("Pod failed validation due to duplicate pod name, ignoring", "pod", klog.KObj(ref), "source", source)
			if m.recorder != nil {
				m.recorder.Eventf(ref, v1.EventTypeWarning, eventFailedValidation,
					"Error validating pod %s from %s due to duplicate pod name %q, ignoring", klog.KObj(ref), source, ref.Name)
			}
			continue
		}
		names[full] = struct{}{}
		if m.observe != nil && source == kubetypes.APIServerSource {
			m.observe(ref)
		}
		existing, found := old[ref.UID]
		if !found {
			// The merger's own copy, annotated; what a source passes is
			// never modified (the API server source's are its informer's).
			p := ref.DeepCopy()
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[kubetypes.ConfigSourceAnnotationKey] = source
			p.Annotations[kubetypes.ConfigFirstSeenAnnotationKey] = m.now().Format(time.RFC3339Nano)
			cur[p.UID] = p
			adds = append(adds, p)
			continue
		}
		cur[ref.UID] = existing
		// What the merger has already seen needs no comparison: from the
		// API server, the same resource version is the same object.
		if source == kubetypes.APIServerSource && ref.ResourceVersion != "" && ref.ResourceVersion == existing.ResourceVersion {
			continue
		}
		existing.ResourceVersion = ref.ResourceVersion
		switch classify(existing, ref) {
		case changeUpdate:
			applyChange(existing, ref)
			updates = append(updates, existing)
		case changeGracefulDelete:
			applyChange(existing, ref)
			deletes = append(deletes, existing)
		case changeStatus:
			existing.Status = ref.Status
			reconciles = append(reconciles, existing)
		}
	}
	for uid, p := range old {
		if _, ok := cur[uid]; !ok {
			removes = append(removes, p)
		}
	}
	m.pods[source] = cur

	var out []PodUpdate
	emit := func(op Op, ps []*v1.Pod) {
		if len(ps) > 0 {
			out = append(out, PodUpdate{Op: op, Source: source, Pods: copyPods(ps)})
		}
	}
	emit(REMOVE, removes)
	emit(ADD, adds)
	emit(UPDATE, updates)
	emit(DELETE, deletes)
	if firstSet && len(adds)+len(updates)+len(deletes) == 0 {
		out = append(out, PodUpdate{Op: ADD, Source: source, Pods: []*v1.Pod{}})
	}
	emit(RECONCILE, reconciles)
	return out
}

// seenAll reports whether every named source has sent a snapshot.
func (m *merger) seenAll(sources []string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range sources {
		if !m.seen[s] {
			return false
		}
	}
	return true
}

// change is how a source's new version of a pod differs from the known one.
type change int

const (
	changeNone change = iota
	// changeStatus: only the status differs (RECONCILE).
	changeStatus
	// changeUpdate: spec, labels, non-local annotations or deletion fields
	// differ and the pod is not being deleted (UPDATE).
	changeUpdate
	// changeGracefulDelete: as changeUpdate, with a deletion timestamp
	// (DELETE).
	changeGracefulDelete
)

// classify is the pure change detection of the merger, upstream's
// checkAndUpdatePod without the mutation.
func classify(existing, ref *v1.Pod) change {
	if !differSemantically(existing, ref) {
		if !reflect.DeepEqual(&existing.Status, &ref.Status) {
			return changeStatus
		}
		return changeNone
	}
	if ref.DeletionTimestamp != nil {
		return changeGracefulDelete
	}
	return changeUpdate
}

func differSemantically(existing, ref *v1.Pod) bool {
	return !reflect.DeepEqual(existing.Labels, ref.Labels) ||
		!reflect.DeepEqual(existing.DeletionTimestamp, ref.DeletionTimestamp) ||
		!reflect.DeepEqual(existing.DeletionGracePeriodSeconds, ref.DeletionGracePeriodSeconds) ||
		!annotationsEqual(existing.Annotations, ref.Annotations) ||
		!reflect.DeepEqual(&existing.Spec, &ref.Spec) // pointers: no copy of the structs
}

// isLocalAnnotation reports annotations the sync loop sets itself, ignored
// when comparing.
func isLocalAnnotation(k string) bool {
	return k == kubetypes.ConfigSourceAnnotationKey || k == kubetypes.ConfigMirrorAnnotationKey || k == kubetypes.ConfigFirstSeenAnnotationKey
}

func annotationsEqual(a, b map[string]string) bool {
	for k, v := range b {
		if isLocalAnnotation(k) {
			continue
		}
		if av, ok := a[k]; !ok || av != v {
			return false
		}
	}
	for k := range a {
		if isLocalAnnotation(k) {
			continue
		}
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// applyChange copies the new version's meaningful fields into existing,
// keeping the locally managed annotations.
func applyChange(existing, ref *v1.Pod) {
	existing.Spec = ref.Spec
	existing.Labels = ref.Labels
	existing.DeletionTimestamp = ref.DeletionTimestamp
	existing.DeletionGracePeriodSeconds = ref.DeletionGracePeriodSeconds
	existing.Generation = ref.Generation
	existing.Status = ref.Status
	ann := make(map[string]string, len(ref.Annotations)+3)
	for k, v := range ref.Annotations {
		ann[k] = v
	}
	for _, k := range []string{kubetypes.ConfigSourceAnnotationKey, kubetypes.ConfigMirrorAnnotationKey, kubetypes.ConfigFirstSeenAnnotationKey} {
		if v, ok := existing.Annotations[k]; ok {
			ann[k] = v
		}
	}
	existing.Annotations = ann
}

func copyPods(ps []*v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, len(ps))
	for i, p := range ps {
		out[i] = p.DeepCopy()
	}
	return out
}
