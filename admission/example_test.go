package admission_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit/nodekit/admission"
)

func Example() {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("110"),
	}}}
	predicates, _ := admission.Predicates(admission.PredicatesConfig{
		OS:   "linux",
		Node: func(context.Context, bool) (*v1.Node, error) { return node, nil },
	})
	sysctls, _ := admission.Sysctls(admission.SafeSysctls(nil))
	chain := admission.Chain{sysctls, predicates}

	pod := &v1.Pod{Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c",
		Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}}}}}
	r := chain.Admit(context.Background(), admission.Attributes{Pod: pod})
	fmt.Println(r.Admit, r.Reason, r.Message)

	pod.Spec.Containers[0].Resources.Requests = nil
	pod.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}}
	r = chain.Admit(context.Background(), admission.Attributes{Pod: pod})
	fmt.Println(r.Admit, r.Reason, r.Message)
	// Output:
	// false OutOfcpu Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000
	// false SysctlForbidden forbidden sysctl: "kernel.msgmax" not allowlisted
}
