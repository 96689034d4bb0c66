package synclooptest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/internal/broadcast"
	"github.com/nodekit/nodekit/syncloop"
)

var (
	_ syncloop.Handler          = (*Handler)(nil)
	_ syncloop.PodConfigHandler = (*Handler)(nil)
)

// Kind names the Handler method an Op records.
type Kind string

// The kinds of Op, one per syncloop.Handler method. The loop routes
// syncloop.DELETE updates to HandlePodUpdates, so they are recorded as
// KindUpdate.
const (
	// KindAdd is HandlePodAdditions.
	KindAdd Kind = "ADD"
	// KindUpdate is HandlePodUpdates.
	KindUpdate Kind = "UPDATE"
	// KindRemove is HandlePodRemoves.
	KindRemove Kind = "REMOVE"
	// KindReconcile is HandlePodReconcile.
	KindReconcile Kind = "RECONCILE"
	// KindSync is HandlePodSyncs.
	KindSync Kind = "SYNC"
	// KindCleanup is HandlePodCleanups.
	KindCleanup Kind = "CLEANUP"
)

// Op is one recorded Handler call. Names, UIDs and Pods are in the order
// the loop passed the pods; all three are empty for KindCleanup.
type Op struct {
	// Kind is the method called.
	Kind Kind
	// Names are the pods' names.
	Names []string
	// UIDs are the pods' UIDs.
	UIDs []types.UID
	// Pods are the pods the loop passed, not copies (the slice is the
	// Handler's own, since the loop reuses the one it passes).
	Pods []*v1.Pod
}

// String renders the op as one transcript line: the kind, then the pod
// names joined by commas ("ADD p1,p2", "CLEANUP").
func (o Op) String() string {
	if len(o.Names) == 0 {
		return string(o.Kind)
	}
	return fmt.Sprintf("%s %s", o.Kind, strings.Join(o.Names, ","))
}

// Transcript renders ops with Op.String, one line each, for comparing a
// whole sequence in one assertion.
func Transcript(ops []Op) []string {
	out := make([]string, len(ops))
	for i, o := range ops {
		out[i] = o.String()
	}
	return out
}

// Handler is a fake syncloop.Handler that records every call as an Op and
// returns at once. The zero value is ready to use; all methods are safe for
// concurrent use.
type Handler struct {
	// CleanupErr, if set, is returned by every HandlePodCleanups (the loop
	// logs it). Set it before the Handler is in use.
	CleanupErr error

	mu      sync.Mutex
	ops     []Op
	changed broadcast.Signal
}

// HandlePodAdditions implements syncloop.PodConfigHandler; it records a
// KindAdd op.
func (h *Handler) HandlePodAdditions(_ context.Context, pods []*v1.Pod) {
	h.record(KindAdd, pods)
}

// HandlePodUpdates implements syncloop.PodConfigHandler; it records a
// KindUpdate op.
func (h *Handler) HandlePodUpdates(_ context.Context, pods []*v1.Pod) {
	h.record(KindUpdate, pods)
}

// HandlePodRemoves implements syncloop.PodConfigHandler; it records a
// KindRemove op.
func (h *Handler) HandlePodRemoves(_ context.Context, pods []*v1.Pod) {
	h.record(KindRemove, pods)
}

// HandlePodReconcile implements syncloop.PodConfigHandler; it records a
// KindReconcile op.
func (h *Handler) HandlePodReconcile(_ context.Context, pods []*v1.Pod) {
	h.record(KindReconcile, pods)
}

// HandlePodSyncs implements syncloop.Handler; it records a KindSync op.
func (h *Handler) HandlePodSyncs(_ context.Context, pods []*v1.Pod) {
	h.record(KindSync, pods)
}

// HandlePodCleanups implements syncloop.Handler; it records a KindCleanup
// op and returns CleanupErr.
func (h *Handler) HandlePodCleanups(context.Context) error {
	h.record(KindCleanup, nil)
	return h.CleanupErr
}

// record appends an op. The loop reuses the slice it passes to
// HandlePodSyncs, so the pods are copied into a new slice.
func (h *Handler) record(kind Kind, pods []*v1.Pod) {
	op := Op{Kind: kind}
	if len(pods) > 0 {
		op.Pods = slices.Clone(pods)
		op.Names = make([]string, len(pods))
		op.UIDs = make([]types.UID, len(pods))
		for i, p := range pods {
			op.Names[i], op.UIDs[i] = p.Name, p.UID
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
	h.changed.Fire()
}

// Take returns the recorded ops, in call order, and forgets them.
func (h *Handler) Take() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	ops := h.ops
	h.ops = nil
	return ops
}

// Len returns how many ops are recorded (since the last Take).
func (h *Handler) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

// Wait waits until at least n ops are recorded, then takes them like Take,
// for tests of Loop.Run. When ctx is done first it returns a copy of the
// ops recorded so far, without taking them, and an error wrapping
// ctx.Err().
func (h *Handler) Wait(ctx context.Context, n int) ([]Op, error) {
	for {
		h.mu.Lock()
		if len(h.ops) >= n {
			ops := h.ops
			h.ops = nil
			h.mu.Unlock()
			return ops, nil
		}
		ops := slices.Clone(h.ops)
		ch := h.changed.Wait()
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ops, fmt.Errorf("synclooptest: waiting for %d ops, have %d %v: %w", n, len(ops), Transcript(ops), ctx.Err())
		}
	}
}
