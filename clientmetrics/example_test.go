package clientmetrics_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodekit/nodekit/clientmetrics"
)

// Example builds client-go's families on a node's registry. A program's
// main then installs the adapters, once, before building any client:
//
//	metrics.Register(m.RESTClient())      // k8s.io/client-go/tools/metrics
//	workqueue.SetProvider(m.Workqueues()) // k8s.io/client-go/util/workqueue
func Example() {
	reg := prometheus.NewRegistry()
	m, err := clientmetrics.New(clientmetrics.Config{Registerer: reg})
	if err != nil {
		panic(err)
	}
	opts := m.RESTClient()
	fmt.Println(opts.RequestLatency != nil, opts.RequestResult != nil, m.Workqueues() != nil)
	// Output: true true true
}
