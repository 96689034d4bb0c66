package cri_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit/nodekit/kubeletapi/cri"
)

// ContainerIDForLogs picks the container whose log answers kubectl logs
// (with --previous, the last terminated one) from the pod's status, with
// the kubelet's messages when there is none.
func ExampleContainerIDForLogs() {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{
			Name:        "nginx",
			ContainerID: "containerd://4f2a",
			State:       v1.ContainerState{Running: &v1.ContainerStateRunning{}},
			LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				ContainerID: "containerd://9c1e", ExitCode: 137,
			}},
		}, {
			Name:  "sidecar",
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff"}},
		}}},
	}
	for _, q := range []struct {
		container string
		previous  bool
	}{{"nginx", false}, {"nginx", true}, {"sidecar", false}, {"missing", false}} {
		id, err := cri.ContainerIDForLogs(pod, q.container, q.previous)
		fmt.Printf("%s previous=%v: %q %v\n", q.container, q.previous, id, err)
	}
	// Output:
	// nginx previous=false: "4f2a" <nil>
	// nginx previous=true: "9c1e" <nil>
	// sidecar previous=false: "" container "sidecar" in pod "web" is waiting to start: trying and failing to pull image
	// missing previous=false: "" container "missing" in pod "web" is not available
}
