package synclooptest_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/syncloop"
	"github.com/nodekit/nodekit/syncloop/synclooptest"
)

// A test drives the loop's synchronous core on a fake clock and reads back
// what the fake Handler was asked to do.
func Example() {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := &synclooptest.Handler{}
	loop, err := syncloop.New(syncloop.Config{
		Handler:         h,
		ExternalSources: []string{kubetypes.APIServerSource},
		Clock:           clk,
		PodsToSync:      func() []types.UID { return []types.UID{"uid-1"} },
	})
	if err != nil {
		panic(err)
	}
	web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"}}
	db := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", UID: "uid-2"}}
	loop.Set(ctx, kubetypes.APIServerSource, []*v1.Pod{web, db})
	loop.Iterate(ctx)
	loop.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: "uid-2", Type: pleg.ContainerStarted})
	loop.Iterate(ctx)
	clk.Step(syncloop.DefaultHousekeepingPeriod) // the sync tick and housekeeping
	loop.Iterate(ctx)

	for _, line := range synclooptest.Transcript(h.Take()) {
		fmt.Println(line)
	}
	// Output:
	// ADD web,db
	// SYNC db
	// SYNC web
	// CLEANUP
}

// A test of Run pushes snapshots through a fake Source and waits for the
// Handler calls they cause.
func ExampleSource() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	h := &synclooptest.Handler{}
	src := synclooptest.NewSource(kubetypes.APIServerSource)
	loop, err := syncloop.New(syncloop.Config{
		Handler: h,
		Sources: []syncloop.Source{src},
		Clock:   clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
	})
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- loop.Run(ctx) }()

	web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"}}
	src.Push(web)
	ops, _ := h.Wait(ctx, 1)
	fmt.Println(synclooptest.Transcript(ops), ops[0].Pods[0].Annotations[kubetypes.ConfigSourceAnnotationKey])
	src.Push()
	ops, _ = h.Wait(ctx, 1)
	fmt.Println(synclooptest.Transcript(ops))

	stop()
	fmt.Println("run:", <-done)
	// Output:
	// [ADD web] api
	// [REMOVE web]
	// run: <nil>
}
