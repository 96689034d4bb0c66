package nodestatus_test

import (
	"context"
	"fmt"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/nodestatus"
)

// An agent assembles setters and a controller, registers its Node and
// reports status. Run(ctx) would repeat Sync on the kubelet's periods.
func Example() {
	client := fake.NewClientset() // a node-identity clientset in a real agent
	underMemoryPressure := func() bool { return false }
	runtimeErrors := func() error { return nil }

	var b nodestatus.Builder
	b.Add(nodestatus.MachineInfo(nodestatus.MachineConfig{
		// cadvisorinfo.Machine() reads the real machine.
		Machine: func() (*cadvisorapi.MachineInfo, error) {
			return &cadvisorapi.MachineInfo{NumCores: 4, MemoryCapacity: 8 << 30}, nil
		},
		// cadvisorinfo.EphemeralStorage("/var/lib/kubelet") would add
		// ephemeral-storage through Capacity.
	}))
	b.Add(nodestatus.GoRuntime(), nil)
	b.Add(nodestatus.MemoryPressureCondition(underMemoryPressure, nil))
	b.Add(nodestatus.ReadyCondition(nodestatus.ReadyConfig{RuntimeErrors: runtimeErrors, IgnoreEphemeralStorage: true}))
	setters, err := b.Setters()
	if err != nil {
		fmt.Println(err)
		return
	}
	ctl, err := nodestatus.New(nodestatus.Config{
		Client:   clientset.Wrap(client),
		NodeName: "edge-1",
		Labels:   map[string]string{"node-role.example.com/edge": ""},
		Setters:  setters,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := ctl.Sync(context.Background())
	fmt.Println(res.Registered, res.Ready, err)
	node, _ := client.CoreV1().Nodes().Get(context.Background(), "edge-1", metav1.GetOptions{})
	for _, c := range node.Status.Conditions {
		fmt.Println(c.Type, c.Status, c.Reason)
	}
	fmt.Println(node.Status.Capacity.Cpu(), node.Status.Capacity.Pods())
	// Output:
	// true true <nil>
	// MemoryPressure False KubeletHasSufficientMemory
	// Ready True KubeletReady
	// 4 110
}
