package podworkers_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/podworkers"
)

// hostSyncer is what a host plugs in: here it only prints; a real one
// drives a CRI runtime and writes pod status.
type hostSyncer struct{ synced, finished chan struct{} }

func (h *hostSyncer) SyncPod(_ context.Context, t podworkers.UpdateType, pod, _ *v1.Pod) (bool, error) {
	fmt.Printf("SyncPod %s %s\n", t, pod.Name)
	h.synced <- struct{}{}
	return false, nil // containers keep running
}

func (h *hostSyncer) SyncTerminatingPod(_ context.Context, pod *v1.Pod, grace int64, statusFn podworkers.StatusFunc) error {
	status := pod.Status.DeepCopy()
	if statusFn != nil {
		statusFn(status)
	}
	fmt.Printf("SyncTerminatingPod %s grace=%ds reason=%s\n", pod.Name, grace, status.Reason)
	return nil // every container stopped
}

func (h *hostSyncer) SyncTerminatingRuntimePod(_ context.Context, pod *podworkers.RuntimePod) error {
	fmt.Printf("SyncTerminatingRuntimePod %s\n", pod.UID)
	return nil
}

func (h *hostSyncer) SyncTerminatedPod(_ context.Context, pod *v1.Pod) error {
	fmt.Printf("SyncTerminatedPod %s\n", pod.Name)
	h.finished <- struct{}{}
	return nil // volumes unmounted, final status written
}

// A host wires its syncer and the PLEG freshness barrier into Workers, runs
// them, and delivers config changes and kills.
func Example() {
	h := &hostSyncer{synced: make(chan struct{}, 1), finished: make(chan struct{}, 1)}
	w, err := podworkers.New(podworkers.Config{
		Syncer: h,
		// The PLEG cache's GetNewerThan in a real host.
		StatusBarrier: func(context.Context, types.UID, time.Time) error { return nil },
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	grace := int64(30)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: &grace},
	}
	_ = w.UpdatePod(ctx, podworkers.Update{Type: podworkers.UpdateCreate, Pod: pod})
	<-h.synced

	// An eviction: a shorter grace period and a status edit.
	evictGrace := int64(5)
	stopped := make(chan struct{})
	_ = w.UpdatePod(ctx, podworkers.Update{Type: podworkers.UpdateKill, Pod: pod, Kill: &podworkers.KillOptions{
		GracePeriodOverride: &evictGrace,
		Evict:               true,
		StatusFunc:          func(s *v1.PodStatus) { s.Phase, s.Reason = v1.PodFailed, "Evicted" },
		Completed:           stopped,
	}})
	<-stopped
	<-h.finished

	cancel()
	fmt.Println("run:", <-done)
	// Housekeeping forgets the finished pod once it is no longer desired.
	fmt.Println("state before housekeeping:", must(w.PodState(pod.UID)))
	fmt.Println("known after housekeeping:", len(w.SyncKnownPods(context.Background(), nil)))
	// Output:
	// SyncPod create web
	// SyncTerminatingPod web grace=5s reason=Evicted
	// SyncTerminatedPod web
	// run: <nil>
	// state before housekeeping: finished
	// known after housekeeping: 0
}

func must(s podworkers.State, _ bool) podworkers.State { return s }

// ProcessPending is the synchronous core: a host without goroutines (or a
// test) delivers updates and then works them off in its own goroutine.
func ExampleWorkers_ProcessPending() {
	h := &hostSyncer{synced: make(chan struct{}, 10), finished: make(chan struct{}, 10)}
	w, _ := podworkers.New(podworkers.Config{Syncer: h})
	ctx := context.Background()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "default", UID: "uid-2"}}
	_ = w.UpdatePod(ctx, podworkers.Update{Type: podworkers.UpdateCreate, Pod: pod})
	deleting := pod.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	_ = w.UpdatePod(ctx, podworkers.Update{Type: podworkers.UpdateUpdate, Pod: deleting})
	fmt.Println("syncs:", w.ProcessPending(ctx))
	// Output:
	// SyncTerminatingPod job grace=30s reason=
	// SyncTerminatedPod job
	// syncs: 2
}
