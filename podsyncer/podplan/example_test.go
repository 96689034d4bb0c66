package podplan_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/podsyncer/podplan"
)

func Example() {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		RestartPolicy:  v1.RestartPolicyNever,
		InitContainers: []v1.Container{{Name: "proxy", RestartPolicy: &always}, {Name: "migrate"}},
		Containers:     []v1.Container{{Name: "app"}},
	}}
	show := func(p podplan.Plan) {
		for _, s := range p.Start {
			fmt.Print("start ", s.Container.Name, "; ")
		}
		fmt.Println("initialized:", p.Initialized, "done:", p.Done)
	}
	in := podplan.Input{Pod: pod, Sandboxes: 1, SandboxReady: true, Containers: map[string]podplan.Container{}}
	show(podplan.Compute(in)) // the sidecar first

	in.Containers["proxy"] = podplan.Container{ID: "1", State: podplan.Running, Started: true}
	show(podplan.Compute(in)) // then the init container, beside it

	in.Containers["migrate"] = podplan.Container{ID: "2", State: podplan.Exited}
	show(podplan.Compute(in)) // then the app

	in.Containers["app"] = podplan.Container{ID: "3", State: podplan.Exited}
	show(podplan.Compute(in)) // the app finished: the pod is done, the sidecar will be stopped
	// Output:
	// start proxy; initialized: false done: false
	// start migrate; initialized: false done: false
	// start app; initialized: true done: false
	// initialized: true done: true
}
