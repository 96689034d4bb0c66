package crisim_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/nodekit/nodekit/crisim"
)

// A simulated runtime served on a unix socket and reached through the
// kubelet's own CRI client.
func Example() {
	dir, err := os.MkdirTemp("", "crisim-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	sim := crisim.New(crisim.Config{})
	endpoint, stop, err := sim.ListenAndServe(filepath.Join(dir, "cri.sock"))
	if err != nil {
		panic(err)
	}
	defer stop()

	ctx := context.Background()
	rt, err := remote.NewRemoteRuntimeService(ctx, endpoint, 10*time.Second, nil, false)
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)
	id, err := rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{
		Name: "web", Namespace: "default", Uid: "uid-1"}}, "")
	if err != nil {
		panic(err)
	}
	sandboxes, err := rt.ListPodSandbox(ctx, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(sandboxes), sandboxes[0].Id == id, sandboxes[0].State)
	// Output: 1 true SANDBOX_READY
}
