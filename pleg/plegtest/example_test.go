package plegtest_test

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/pleg/plegtest"
)

// Example tests code built on a pleg.Generator: the fake runtime plays the
// container runtime, one fake clock drives both, and the host drives
// Relist itself.
func Example() {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	rt := plegtest.New(clk)
	gen, err := pleg.New(pleg.Config{
		Runtime:     rt,
		Clock:       clk,
		RuntimeName: "fake",
		Sink:        func(ev pleg.PodLifecycleEvent) { fmt.Println(ev.ID, ev.Type, ev.ContainerID) },
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	rt.RunPod("uid-web", "default", "web")
	app := rt.StartContainer("uid-web", "app")
	if _, err := gen.Relist(ctx); err != nil {
		panic(err)
	}

	clk.Step(time.Second)
	if err := rt.ExitContainer(app, 1); err != nil {
		panic(err)
	}
	if _, err := gen.Relist(ctx); err != nil {
		panic(err)
	}
	st, _ := gen.Cache().Get("uid-web")
	fmt.Println(st.Namespace, st.Name, st.IPs, st.ContainerStatuses[0].ExitCode)

	// The runtime fails once.
	rt.InjectError("ListContainers", status.Error(codes.Unavailable, "runtime down"), 1)
	_, err = gen.Relist(ctx)
	fmt.Println(err)
	fmt.Println("ListContainers calls:", rt.Calls("ListContainers"))
	// Output:
	// uid-web ContainerStarted fake://sb-1
	// uid-web ContainerStarted fake://c-1
	// uid-web ContainerDied fake://c-1
	// default web [10.88.0.2] 1
	// pleg: relist: list containers: rpc error: code = Unavailable desc = runtime down
	// ListContainers calls: 3
}
