package admission

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/kubetypes"
)

// Attributes is what a Handler sees.
type Attributes struct {
	// Pod is the pod to admit.
	Pod *v1.Pod
	// OtherPods are the pods already admitted to the node that are not yet
	// terminated; their requests and host ports are in use.
	OtherPods []*v1.Pod
}

// Result is a Handler's decision. A rejection carries the reason and
// message the pod's status and event show.
type Result = kubetypes.AdmitResult

// Admitted is the Result of a handler with nothing to object to.
func Admitted() Result { return Result{Admit: true} }

// Handler admits or rejects one pod. It must not keep attrs.
type Handler interface {
	Admit(ctx context.Context, attrs Attributes) Result
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, attrs Attributes) Result

// Admit calls f.
func (f HandlerFunc) Admit(ctx context.Context, attrs Attributes) Result { return f(ctx, attrs) }

// Chain is a list of handlers consulted in order; the first rejection is
// the Chain's Result. An empty Chain admits every pod.
type Chain []Handler

// Admit runs the handlers until one rejects the pod.
func (c Chain) Admit(ctx context.Context, attrs Attributes) Result {
	for _, h := range c {
		if r := h.Admit(ctx, attrs); !r.Admit {
			return r
		}
	}
	return Admitted()
}
