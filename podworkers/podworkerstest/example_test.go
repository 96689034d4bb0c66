package podworkerstest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/podworkers"
	"github.com/nodekit/nodekit/podworkers/podworkerstest"
)

// A test of a host's use of Workers scripts the fake Syncer per pod,
// drives the workers synchronously and reads back what the runtime was
// asked to do.
func Example() {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	syncer := &podworkerstest.Syncer{}
	barrier := &podworkerstest.Barrier{}
	w, err := podworkers.New(podworkers.Config{Syncer: syncer, StatusBarrier: barrier.Wait, Clock: clk})
	if err != nil {
		panic(err)
	}

	// The first sync fails; the retry reports that the pod ran to completion.
	syncer.SetError(podworkerstest.MethodSyncPod, "uid-1", errors.New("image pull failed"))
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "default", UID: "uid-1"}}
	_ = w.UpdatePod(ctx, podworkers.Update{Type: podworkers.UpdateCreate, Pod: pod})
	fmt.Println("syncs:", w.ProcessPending(ctx))

	syncer.SetError(podworkerstest.MethodSyncPod, "uid-1", nil)
	syncer.SetTerminal("uid-1", true)
	clk.Step(podworkers.DefaultBackOffPeriod * 3 / 2) // the backoff with its jitter
	for _, uid := range w.DuePods() {
		_ = w.UpdatePod(ctx, podworkers.Update{Type: podworkers.UpdateSync, Pod: pod})
		fmt.Println("due:", uid)
	}
	fmt.Println("syncs:", w.ProcessPending(ctx))

	for _, line := range podworkerstest.Transcript(syncer.Calls()) {
		fmt.Println(line)
	}
	state, _ := w.PodState(pod.UID)
	fmt.Println("state:", state, "barrier calls:", len(barrier.Calls()))
	// Output:
	// syncs: 1
	// due: uid-1
	// syncs: 3
	// SyncPod create uid-1
	// SyncPod sync uid-1
	// SyncTerminatingPod uid-1 grace=30
	// SyncTerminatedPod uid-1
	// state: finished barrier calls: 4
}

// Block holds a call in flight so a test can look at the workers while the
// runtime is still stopping the pod.
func ExampleSyncer_Block() {
	ctx := context.Background()
	syncer := &podworkerstest.Syncer{}
	w, _ := podworkers.New(podworkers.Config{Syncer: syncer})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-2"}}

	release := syncer.Block(podworkerstest.MethodSyncTerminatingPod, pod.UID)
	_ = w.UpdatePod(ctx, podworkers.Update{Type: podworkers.UpdateKill, Pod: pod})
	done := make(chan int)
	go func() { done <- w.ProcessPending(ctx) }()

	_ = syncer.WaitInFlight(ctx, 1)
	fmt.Println("in flight:", syncer.InFlight(), "containers may run:", w.CouldHaveRunningContainers(pod.UID))
	release()
	fmt.Println("syncs:", <-done, "containers may run:", w.CouldHaveRunningContainers(pod.UID))
	// Output:
	// in flight: 1 containers may run: true
	// syncs: 2 containers may run: false
}
