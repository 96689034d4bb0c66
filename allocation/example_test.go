package allocation_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit/nodekit/allocation"
	"github.com/nodekit/nodekit/kubetypes"
)

func Example() {
	ctx := context.Background()
	m, _ := allocation.New(allocation.Config{
		// Admit whatever asks for at most one CPU (the kubelet runs its
		// admit handlers here).
		Admit: func(_ context.Context, p *v1.Pod, _ []*v1.Pod) kubetypes.AdmitResult {
			if p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() > 1000 {
				return kubetypes.AdmitResult{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu"}
			}
			return kubetypes.AdmitResult{Admit: true}
		},
	})
	withCPU := func(gen int64, cpu string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u", Generation: gen}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}}}
	}
	m.Allocated(withCPU(1, "500m")) // admitted with 500m

	started, _ := m.Resize(ctx, withCPU(2, "2"), nil)
	fmt.Println("2 CPUs started:", started, "-", m.Conditions("u")[0].Reason)

	started, _ = m.Resize(ctx, withCPU(3, "800m"), nil)
	fmt.Println("800m started:", started, "-", m.Conditions("u")[0].Type)
	m.SetActuated("u", "container-1", withCPU(3, "800m").Spec.Containers[0].Resources)
	fmt.Println("completed:", m.Actuation("u", nil), "conditions:", len(m.Conditions("u")))
	// Output:
	// 2 CPUs started: false - Deferred
	// 800m started: true - PodResizeInProgress
	// completed: true conditions: 0
}
