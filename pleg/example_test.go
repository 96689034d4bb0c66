package pleg_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/nodekit/nodekit/internal/crisim"
	"github.com/nodekit/nodekit/pleg"
)

// Example wires the generator to a CRI runtime through k8s.io/cri-client
// (here the in-memory simulator; pass containerd's or CRI-O's endpoint in
// a real agent), runs it in evented mode, and consumes its events and
// cache as a sync loop and pod workers would.
func Example() {
	dir, _ := os.MkdirTemp("", "pleg-example")
	defer os.RemoveAll(dir)
	sim := crisim.New(crisim.Config{Images: []crisim.Image{{Ref: "registry.k8s.io/pause:3.10"}, {Ref: "busybox"}}})
	endpoint, stop, err := sim.ListenAndServe(filepath.Join(dir, "cri.sock"))
	if err != nil {
		panic(err)
	}
	defer stop()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt, err := remote.NewRemoteRuntimeService(ctx, endpoint, 2*time.Minute, nil, false)
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)

	gen, err := pleg.New(pleg.Config{Runtime: rt, Evented: true})
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- gen.Run(ctx) }()

	// What a kubelet's pod syncer would do: a sandbox and a container,
	// labelled with the pod UID.
	labels := map[string]string{pleg.PodUIDLabel: "uid-web"}
	podCfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"},
		Labels:   labels,
	}
	sb, err := rt.RunPodSandbox(ctx, podCfg, "")
	if err != nil {
		panic(err)
	}
	<-gen.Events() // the sandbox started
	id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		Labels:   labels,
	}, podCfg)
	if err != nil {
		panic(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		panic(err)
	}

	ev := <-gen.Events()
	fmt.Println(ev.ID, ev.Type, ev.ContainerID.ID == id)

	// Pod workers wait for status newer than their last sync, then read it.
	barrier := gen.Cache().WaitNewerThan
	if err := barrier(ctx, ev.ID, time.Time{}); err != nil {
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
	dir, _ := os.MkdirTemp("", "pleg-example")
	defer os.RemoveAll(dir)
	sim := crisim.New(crisim.Config{})
	endpoint, stop, err := sim.ListenAndServe(filepath.Join(dir, "cri.sock"))
	if err != nil {
		panic(err)
	}
	defer stop()
	ctx := context.Background()
	rt, err := remote.NewRemoteRuntimeService(ctx, endpoint, 2*time.Minute, nil, false)
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)
	gen, err := pleg.New(pleg.Config{Runtime: rt})
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"a", "b"} {
		cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name}}
		if _, err := rt.RunPodSandbox(ctx, cfg, ""); err != nil {
			panic(err)
		}
	}
	res, err := gen.Relist(ctx)
	fmt.Printf("%+v %v\n", res, err)
	res, err = gen.Relist(ctx)
	fmt.Printf("%+v %v\n", res, err)
	// Output:
	// {Pods:2 Inspected:2 Failed:0 Events:2} <nil>
	// {Pods:2 Inspected:0 Failed:0 Events:0} <nil>
}
