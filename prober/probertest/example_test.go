package probertest_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/prober"
	"github.com/nodekit/nodekit/prober/probertest"
)

// Example tests an exec liveness probe: the Runner plays the container
// runtime, the Recorder the sync loop, and the test steps a fake clock and
// calls RunOnce instead of running the Manager's loop.
func Example() {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	runner := &probertest.Runner{}
	rec := &probertest.Recorder{}
	m, err := prober.New(prober.Config{
		Clock:  clk,
		Runner: runner,
		Sink:   rec.Sink,
		Rand:   func() float64 { return 0 }, // first runs at AddPod time
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "app",
			LivenessProbe: &v1.Probe{
				ProbeHandler:     v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}},
				PeriodSeconds:    5,
				FailureThreshold: 2,
			},
		}}},
	}
	if err := m.AddPod(pod); err != nil {
		panic(err)
	}
	m.UpdatePodStatus(ctx, pod, &v1.PodStatus{
		Phase: v1.PodRunning,
		ContainerStatuses: []v1.ContainerStatus{{
			Name:        "app",
			ContainerID: "containerd://c1",
			State:       v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(clk.Now())}},
		}},
	})

	m.RunOnce(ctx)
	runner.SetExit("cat /tmp/healthy", 1) // the file is gone
	for range 2 {
		clk.Step(5 * time.Second)
		m.RunOnce(ctx)
	}

	for _, u := range rec.Updates() {
		fmt.Println(u.Type, u.ContainerID, u.Result)
	}
	last, _ := rec.Last(prober.Liveness, "containerd://c1")
	fmt.Println("last:", last)
	calls := runner.Calls()
	fmt.Println("exec calls:", len(calls), "in", calls[0].ContainerID)
	// Output:
	// Liveness containerd://c1 Success
	// Liveness containerd://c1 Failure
	// last: Failure
	// exec calls: 3 in c1
}
