package simulated_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/virtualnode/simulated"
)

// Example runs a pod in the simulator on a fake clock: Pending, then
// Running once ReadyDelay passed, then stopped within its grace period.
func Example() {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	sim, err := simulated.New(simulated.Config{ReadyDelay: 2 * time.Second, Clock: clk})
	if err != nil {
		panic(err)
	}
	defer sim.Close()
	ctx := context.Background()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "nginx"}}}}
	_ = sim.CreatePod(ctx, pod)
	st, _ := sim.PodStatus(ctx, pod)
	fmt.Println(st.Phase, st.PodIP)
	clk.Step(2 * time.Second)
	st, _ = sim.PodStatus(ctx, pod)
	fmt.Println(st.Phase, st.ContainerStatuses[0].Ready)
	_ = sim.DeletePod(ctx, pod, 30*time.Second)
	st, _ = sim.PodStatus(ctx, pod)
	fmt.Println(st.Phase, st.ContainerStatuses[0].State.Terminated.ExitCode)
	// Output:
	// Pending 10.64.0.1
	// Running true
	// Succeeded 0
}
