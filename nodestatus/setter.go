package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// Setter fills one part of a node: its status, and for a few setters its
// labels or annotations. A setter works on the copy the caller hands it and
// must not keep a reference to it. now is the time of the computation, on
// the Controller's clock (one instant for every setter of one update): use
// it for heartbeat and transition times, never a clock of your own. An error
// means the setter could not do its whole job; what it did set stays set
// and the other setters still run.
type Setter func(ctx context.Context, now time.Time, node *v1.Node) error

// Recorder receives the node events a setter emits (NodeReady,
// NodeHasInsufficientMemory, Rebooted, ...). It is called synchronously from
// the setter and must not block. A nil Recorder drops events.
type Recorder func(eventType, reason, message string)

// EventRecorder adapts a client-go EventRecorder: events are recorded against
// the node the way the kubelet references it (kind Node, UID = node name).
func EventRecorder(rec record.EventRecorder, nodeName string) Recorder {
	ref := &v1.ObjectReference{Kind: "Node", Name: nodeName, UID: types.UID(nodeName)}
	return func(eventType, reason, message string) {
		rec.Event(ref, eventType, reason, message)
	}
}

func (r Recorder) record(eventType, reason, message string) {
	if r != nil {
		r(eventType, reason, message)
	}
}

// statusEvent records the kubelet's "Node <name> status is now: <reason>".
func (r Recorder) statusEvent(ctx context.Context, node *v1.Node, eventType, reason string) {
	klog.FromContext(ctx).V(2).Info("Recording event for node", "node", klog.KObj(node), "event", reason)
	r.record(eventType, reason, fmt.Sprintf("Node %s status is now: %s", node.Name, reason))
}

// Apply runs every setter on node in order, at now, and returns the errors
// of those that failed, joined. A failing setter never stops the others;
// each failure is also logged.
func Apply(ctx context.Context, now time.Time, node *v1.Node, setters []Setter) error {
	var errs []error
	for i, set := range setters {
		if err := set(ctx, now, node); err != nil {
			klog.FromContext(ctx).Error(err, "Failed to set some node status fields", "node", klog.KObj(node), "setter", i)
			errs = append(errs, err)
		}
	}
	moveReadyLast(node)
	return errors.Join(errs...)
}

// Builder collects setters from constructors that return (Setter, error),
// so a list is assembled in one place and every constructor error is
// reported at once:
//
//	var b nodestatus.Builder
//	b.Add(nodestatus.NodeAddress(addrCfg))
//	b.Add(nodestatus.GoRuntime(), nil)
//	setters, err := b.Setters()
type Builder struct {
	setters []Setter
	errs    []error
}

// Add appends s, or records err if it is not nil.
func (b *Builder) Add(s Setter, err error) {
	switch {
	case err != nil:
		b.errs = append(b.errs, err)
	case s == nil:
		b.errs = append(b.errs, fmt.Errorf("%w: nil setter at position %d", ErrInvalidConfig, len(b.setters)+len(b.errs)))
	default:
		b.setters = append(b.setters, s)
	}
}

// Setters returns the setters added so far, or every constructor error.
func (b *Builder) Setters() ([]Setter, error) {
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	return append([]Setter(nil), b.setters...), nil
}

// ErrInvalidConfig is wrapped by every configuration error of this package.
var ErrInvalidConfig = errors.New("nodestatus: invalid configuration")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
}
