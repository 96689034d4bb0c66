package criinstrument_test

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	critesting "k8s.io/cri-api/pkg/apis/testing"

	"github.com/nodekit/nodekit/criinstrument"
)

// Example wraps a runtime service (here cri-api's fake; in an agent,
// cri-client's NewRemoteRuntimeService) and reads what one call recorded.
func Example() {
	reg := prometheus.NewRegistry()
	m, err := criinstrument.New(criinstrument.Config{Registerer: reg})
	if err != nil {
		panic(err)
	}
	rt := m.Runtime(critesting.NewFakeRuntimeService())
	// Hand rt to every block that talks to the runtime (pleg, prober, the
	// pod syncer, ...).
	if _, err := rt.ListContainers(context.Background(), nil); err != nil {
		panic(err)
	}
	n, _ := testutil.GatherAndCount(reg, "kubelet_runtime_operations_total")
	fmt.Println("operation types seen:", n)
	// Output: operation types seen: 1
}
