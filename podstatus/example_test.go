package podstatus_test

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

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
