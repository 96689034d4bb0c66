package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodekit/nodekit/crisim"
)

// BenchmarkAgentPodStartup creates 100 pods bound to a node run by the
// reference agent on the CRI simulator and measures, through a watch, the
// time from each create to the first status with phase Running.
func BenchmarkAgentPodStartup(b *testing.B) {
	ctx := context.Background()
	admin := srv.AdminClient()
	for i := 0; b.Loop(); i++ {
		node := fmt.Sprintf("startup-%d-%d", b.N, i)
		ns := "default"
		ensureDefaultServiceAccount(b, admin, ns)
		stop := runAgent(b, node, crisim.New(crisim.Config{}), b.TempDir())
		w, err := admin.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			b.Fatal(err)
		}
		created := map[string]time.Time{}
		for p := range 100 {
			pod := boundPod(fmt.Sprintf("%s-p%d", node, p), node)
			created[pod.Name] = time.Now()
			if _, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		var lat []time.Duration
		seen := map[string]bool{}
		timeout := time.After(2 * time.Minute)
		for len(seen) < 100 {
			select {
			case ev := <-w.ResultChan():
				if ev.Type != watch.Modified {
					continue
				}
				p := ev.Object.(*v1.Pod)
				if p.Status.Phase == v1.PodRunning && !seen[p.Name] {
					seen[p.Name] = true
					lat = append(lat, time.Since(created[p.Name]))
				}
			case <-timeout:
				b.Fatalf("only %d pods Running", len(seen))
			}
		}
		w.Stop()
		stop()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[49].Milliseconds()), "p50-ms")
		b.ReportMetric(float64(lat[98].Milliseconds()), "p99-ms")
	}
}
