package containergc_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit/nodekit/containergc"
)

func ExampleSelect() {
	dead := func(id, pod string, created int64) *runtimeapi.Container {
		return &runtimeapi.Container{Id: id, PodSandboxId: "sb-" + pod, CreatedAt: created, State: runtimeapi.ContainerState_CONTAINER_EXITED,
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Labels: map[string]string{"io.kubernetes.pod.uid": pod}}
	}
	containers := []*runtimeapi.Container{dead("a1", "web", 1), dead("a2", "web", 2), dead("a3", "web", 3), dead("b1", "gone", 1)}
	sandboxes := []*runtimeapi.PodSandbox{
		{Id: "sb-web", CreatedAt: 1, Metadata: &runtimeapi.PodSandboxMetadata{Uid: "web"}},
		{Id: "sb-gone", CreatedAt: 1, State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, Metadata: &runtimeapi.PodSandboxMetadata{Uid: "gone"}},
	}
	sel := containergc.Select(containergc.Policy{}, containers, sandboxes, func(uid types.UID) bool { return uid == "web" })
	fmt.Println("containers:", sel.Containers)
	fmt.Println("sandboxes:", sel.Sandboxes)
	// Output:
	// containers: [a1 a2 b1]
	// sandboxes: [sb-gone]
}
