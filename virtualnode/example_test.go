package virtualnode_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekit/nodekit/virtualnode"
	"github.com/nodekit/nodekit/virtualnode/simulated"
)

// Example wires three virtual nodes on the simulated provider. Against a
// real cluster, pass clients built from a kubeconfig (and a heartbeat client
// from lease.HeartbeatRESTConfig) and run until a signal.
func Example() {
	client := fake.NewClientset()
	sim, err := simulated.New(simulated.Config{ReadyDelay: time.Second})
	if err != nil {
		panic(err)
	}
	defer sim.Close()
	a, err := virtualnode.New(virtualnode.Config{Client: client, Nodes: []string{"vn-0", "vn-1", "vn-2"}, Provider: sim})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a real host cancels on SIGTERM
	fmt.Println(a.Run(ctx), a.Nodes())
	// Output: <nil> [vn-0 vn-1 vn-2]
}
