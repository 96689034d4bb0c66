package main

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"

	"github.com/nodekit/nodekit/clientmetrics"
)

// installClientMetrics gives client-go's REST clients and work queues the
// kubelet's rest_client_* and workqueue_* families on the agent's
// registry. client-go's hooks are process-global and set once, so only
// the program does it (the kubelet's component-base does it from package
// init functions), before the agent builds its clients and queues.
func installClientMetrics(reg *prometheus.Registry) error {
	m, err := clientmetrics.New(clientmetrics.Config{Registerer: reg})
	if err != nil {
		return err
	}
	metrics.Register(m.RESTClient())
	workqueue.SetProvider(m.Workqueues())
	return nil
}
