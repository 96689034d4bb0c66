package cgroups_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodekit/nodekit/cgroups"
)

func ExamplePodResources() {
	res := func(cpu, mem string) v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	}
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{
		{Name: "app", Resources: v1.ResourceRequirements{Requests: res("250m", "64Mi"), Limits: res("500m", "128Mi")}},
		{Name: "log", Resources: v1.ResourceRequirements{Requests: res("50m", "16Mi"), Limits: res("100m", "32Mi")}},
	}}}
	r := cgroups.PodResources(pod)
	fmt.Println(cgroups.QOSClass(pod), "shares:", r.CPUShares, "quota:", r.CPUQuota, "memory:", r.Memory>>20, "MiB")
	// Output: Burstable shares: 307 quota: 60000 memory: 160 MiB
}
