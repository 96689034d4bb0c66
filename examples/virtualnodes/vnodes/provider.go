package vnodes

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Provider runs the pods bound to the virtual nodes: a simulator, a cloud
// container service, a remote cluster. The agent calls it from podworkers'
// goroutines, concurrently for different pods but never concurrently for one
// pod UID. Methods must not modify the pods they are given.
type Provider interface {
	// CreatePod makes the pod's containers run. It is called on every sync
	// of a running pod and must be idempotent; it should return promptly and
	// let the containers start in the background.
	CreatePod(ctx context.Context, pod *v1.Pod) error
	// DeletePod stops the pod's containers, giving them at most gracePeriod
	// (it may be called again with a shorter one, after ctx of the previous
	// call was cancelled). It blocks until no container runs, or returns
	// ctx's error. Stopping a pod that does not run is not an error.
	DeletePod(ctx context.Context, pod *v1.Pod, gracePeriod time.Duration) error
	// PodStatus returns the pod status as the provider sees it (phase,
	// conditions, container statuses, pod IPs), or nil if the provider has
	// no record of the pod. The agent adds hostIP and qosClass. Times
	// should be whole seconds (the API drops fractions) and stable across
	// calls, so that an unchanged pod compares equal and is not patched.
	PodStatus(ctx context.Context, pod *v1.Pod) (*v1.PodStatus, error)
	// ForgetPod releases what the provider remembers of a finished pod.
	ForgetPod(uid types.UID)
	// Healthy returns nil while the provider can run pods; an error turns
	// every virtual node NotReady at the next status computation, with the
	// error in the Ready condition's message. It must not block and must be
	// safe for concurrent use.
	Healthy() error
}

// PodNotifier is implemented by providers whose pods change on their own
// (a container became ready, exited). The agent calls NotifyPods once, before
// it starts; the provider then calls notify with the UID of a pod whose status
// changed, from any goroutine. notify never blocks. Without it, pod statuses
// are only refreshed at each resync (podworkers' ResyncInterval).
type PodNotifier interface {
	NotifyPods(notify func(uid types.UID))
}
