package podstatus_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testclock "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/podstatus"
)

// A status set by the agent is merged into the pod as the API server has
// it: the readiness gate's condition, set by a controller, stays.
func Example() {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{ReadinessGates: []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}},
		Status: v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{
			{Type: "example.com/lb", Status: v1.ConditionFalse}}}}
	client := fake.NewClientset(pod)
	m, err := podstatus.New(podstatus.Config{Client: clientset.Wrap(client)})
	if err != nil {
		panic(err)
	}
	s := v1.PodStatus{Phase: v1.PodRunning}
	containersReady, ready := podstatus.ReadyConditions(pod, &s)
	s.Conditions = []v1.PodCondition{containersReady, ready}
	m.SetPodStatus(pod, s) // never blocks; Run (or Sync) writes it
	if err := m.Sync(context.Background(), pod.UID); err != nil {
		panic(err)
	}
	got, _ := client.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{})
	fmt.Println(got.Status.Phase)
	for _, c := range got.Status.Conditions {
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s %s %s", c.Type, c.Status, c.Reason)))
	}
	// Output:
	// Running
	// example.com/lb False
	// ContainersReady True
	// Ready False ReadinessGatesNotReady
}

// A host that builds statuses itself (a provider without a pod syncer)
// gets what the kubelet's status manager adds: a start time, transition
// times, whole seconds.
func ExampleManager_SetPodStatus() {
	clk := testclock.NewFakeClock(time.Date(2026, 11, 25, 10, 0, 0, 500_000_000, time.UTC))
	m, err := podstatus.New(podstatus.Config{Clock: clk})
	if err != nil {
		panic(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"}}
	m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}})
	clk.Step(time.Minute)
	m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}}})
	s, _ := m.PodStatus(pod.UID)
	fmt.Println("started", s.StartTime.UTC().Format(time.RFC3339))
	fmt.Println("ready", s.Conditions[0].Status, "since", s.Conditions[0].LastTransitionTime.UTC().Format(time.RFC3339))
	// Output:
	// started 2026-11-25T10:00:00Z
	// ready False since 2026-11-25T10:01:00Z
}
