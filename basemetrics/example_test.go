package basemetrics_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nodekit/nodekit/basemetrics"
)

// Example registers the base families on a node's registry.
func Example() {
	reg := prometheus.NewRegistry()
	if err := basemetrics.Register(basemetrics.Config{Registerer: reg, NodeName: "node-1", Version: "v1.36.3"}); err != nil {
		panic(err)
	}
	n, _ := testutil.GatherAndCount(reg, "kubelet_node_name", "kubernetes_build_info")
	fmt.Println("series:", n)
	// Output: series: 2
}
