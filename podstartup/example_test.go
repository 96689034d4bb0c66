package podstartup_test

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/podstartup"
)

// Example feeds a Tracker as an agent's parts would: the pod source, the
// image puller, the status writer, the pod source again.
func Example() {
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(created)
	reg := prometheus.NewRegistry()
	tr, err := podstartup.New(podstartup.Config{Clock: clk, Registerer: reg})
	if err != nil {
		panic(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "u1", CreationTimestamp: metav1.NewTime(created)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	tr.ObservedOnWatch(pod) // the pod source hands it over

	clk.SetTime(created.Add(time.Second))
	tr.ImagePullStarted(pod.UID)
	clk.SetTime(created.Add(4 * time.Second))
	tr.ImagePullFinished(pod.UID)

	running := pod.DeepCopy()
	running.Status = v1.PodStatus{Phase: v1.PodRunning, StartTime: &metav1.Time{Time: created},
		ContainerStatuses: []v1.ContainerStatus{{Name: "app",
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(created.Add(5 * time.Second))}}}}}
	clk.SetTime(created.Add(5 * time.Second))
	tr.StatusWritten(running) // the status writer's patch went through
	clk.SetTime(created.Add(6 * time.Second))
	tr.ObservedOnWatch(running) // and the watch shows it

	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if h := mf.GetMetric()[0].GetHistogram(); h != nil {
			fmt.Printf("%s: %d pod, %.0fs\n", mf.GetName(), h.GetSampleCount(), h.GetSampleSum())
		}
	}
	// Output:
	// kubelet_pod_start_sli_duration_seconds: 1 pod, 3s
	// kubelet_pod_start_total_duration_seconds: 1 pod, 6s
}
