package eviction_test

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit/nodekit/eviction"
)

// Example wires a Manager into a host: thresholds from kubelet flags,
// statistics from a provider, the pod list and kill function of the host's
// pod workers, and the pressure queries for its node status setters.
func Example() {
	thresholds, err := eviction.ParseThresholdFlags("memory.available<100Mi", "", "", "")
	if err != nil {
		panic(err)
	}

	// The host's pods and pod workers.
	hog := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hog", Namespace: "default", UID: "u1"}}
	pods := []*v1.Pod{hog}
	killPod := func(ctx context.Context, pod *v1.Pod, grace int64, update func(*v1.PodStatus)) error {
		update(&pod.Status) // the status the host will report
		fmt.Printf("kill %s grace=%ds: %s %s\n", pod.Name, grace, pod.Status.Phase, pod.Status.Reason)
		return nil // a real host asks its pod workers to stop the pod and waits
	}

	// Statistics; a real host passes a stats.Provider (stats.New).
	avail, ws, usage := uint64(50<<20), uint64(8<<30), uint64(1<<30)
	summary := eviction.SummaryProviderFunc(func(context.Context) (*statsapi.Summary, error) {
		return &statsapi.Summary{
			Node: statsapi.NodeStats{Memory: &statsapi.MemoryStats{AvailableBytes: &avail, WorkingSetBytes: &ws}},
			Pods: []statsapi.PodStats{{PodRef: statsapi.PodReference{Name: "hog", Namespace: "default", UID: "u1"},
				Memory: &statsapi.MemoryStats{WorkingSetBytes: &usage}}},
		}, nil
	})

	m, err := eviction.New(eviction.Config{
		Thresholds: thresholds,
		Summary:    summary,
		ActivePods: func() []*v1.Pod { return pods },
		KillPod:    killPod,
	})
	if err != nil {
		panic(err)
	}

	// Node status pressure setters read these.
	memoryPressure := m.IsUnderMemoryPressure

	// A host runs m.Run(ctx); here one pass is enough.
	res, err := m.Synchronize(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println("MemoryPressure:", memoryPressure())
	fmt.Println(strings.TrimSpace(res.Message))
	fmt.Println("admit BestEffort:", m.Admit(&v1.Pod{}).Admit)
	// Output:
	// kill hog grace=1s: Failed Evicted
	// MemoryPressure: true
	// The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi.
	// admit BestEffort: false
}
