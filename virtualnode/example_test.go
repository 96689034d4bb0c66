package virtualnode_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekit/nodekit/kubeclient/clientset"
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
	a, err := virtualnode.New(virtualnode.Config{Client: clientset.Wrap(client), Nodes: []string{"vn-0", "vn-1", "vn-2"}, Provider: sim})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a real host cancels on SIGTERM
	fmt.Println(a.Run(ctx), a.Nodes())
	// Output: <nil> [vn-0 vn-1 vn-2]
}

// ExampleNewSharded shares nodes among replicas: each replica runs this
// with its own Identity and the same node list, and holds the shards whose
// Leases it gets.
func ExampleNewSharded() {
	sim, err := simulated.New(simulated.Config{})
	if err != nil {
		panic(err)
	}
	defer sim.Close()
	nodes := []string{"vn-0", "vn-1", "vn-2", "vn-3"}
	s, err := virtualnode.NewSharded(virtualnode.ShardedConfig{Identity: "replica-a", Shards: 2,
		Agent: virtualnode.Config{Client: clientset.Wrap(fake.NewClientset()), Nodes: nodes, Provider: sim}})
	if err != nil {
		panic(err)
	}
	for _, n := range nodes {
		fmt.Printf("%s: shard %d\n", n, virtualnode.ShardOf(n, 2))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a real host cancels on SIGTERM; Run then releases the shards
	fmt.Println(s.Run(ctx), s.Leading())
	// Output:
	// vn-0: shard 0
	// vn-1: shard 1
	// vn-2: shard 0
	// vn-3: shard 1
	// <nil> []
}
