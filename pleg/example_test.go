package pleg_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/pleg/plegtest"
)

// Example runs the generator in evented mode over a CRI runtime (here
// plegtest's in-memory runtime; in a real agent, k8s.io/cri-client's
// NewRemoteRuntimeService on containerd's or CRI-O's endpoint) and consumes
// its events and cache as a sync loop and pod workers would. One fake clock
// drives the generator and the runtime's timestamps.
func Example() {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	rt := plegtest.New(clk)
	gen, err := pleg.New(pleg.Config{Runtime: rt, Evented: true, Clock: clk})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- gen.Run(ctx) }()

	// What a kubelet's pod syncer would have the runtime do: a sandbox,
	// then a container in it.
	rt.RunPod("uid-web", "default", "web")
	<-gen.Events() // the sandbox started
	id := rt.StartContainer("uid-web", "app")

	// The runtime's event reaches the consumer without waiting for a
	// periodic relist: the clock has not moved.
	ev := <-gen.Events()
	fmt.Println(ev.ID, ev.Type, ev.ContainerID.ID == id)

	// A pod worker that last synced at synced waits for status newer than
	// that (the generator relists the pod to confirm it), then reads it.
	synced := clk.Now()
	clk.Step(time.Second)
	barrier := gen.Cache().WaitNewerThan
	if err := barrier(ctx, ev.ID, synced); err != nil {
		panic(err)
	}
	st, _ := gen.Cache().Get(ev.ID)
	fmt.Println(st.Name, len(st.ContainerStatuses), st.ContainerStatuses[0].State)

	fmt.Println("healthy:", gen.Healthy() == nil)
	cancel()
	fmt.Println("run:", <-done)
	// Output:
	// uid-web ContainerStarted true
	// web 1 CONTAINER_RUNNING
	// healthy: true
	// run: <nil>
}

// ExampleGenerator_Relist drives the synchronous core directly: one pass,
// no goroutines, the host decides when.
func ExampleGenerator_Relist() {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	rt := plegtest.New(clk)
	gen, err := pleg.New(pleg.Config{Runtime: rt, Clock: clk})
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"a", "b"} {
		rt.RunPod(types.UID("uid-"+name), "default", name)
	}
	ctx := context.Background()
	res, err := gen.Relist(ctx)
	fmt.Printf("%+v %v\n", res, err)
	res, err = gen.Relist(ctx)
	fmt.Printf("%+v %v\n", res, err)
	// Output:
	// {Pods:2 Inspected:2 Failed:0 Events:2} <nil>
	// {Pods:2 Inspected:0 Failed:0 Events:0} <nil>
}
