package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodekit/nodekit/kubeclient"
	"github.com/nodekit/nodekit/lease"
	"github.com/nodekit/nodekit/test/apiserver"
	"github.com/nodekit/nodekit/virtualnode"
	"github.com/nodekit/nodekit/virtualnode/simulated"
)

// countingTransport counts the requests sent through a client.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// vnodeClients returns the agent's main and heartbeat clients (admin: the
// harness has one identity per node, the program uses one for all), both
// counting their requests into n.
func vnodeClients(t testing.TB, n *atomic.Int64) (main, heartbeat kubeclient.Interface) {
	cfg := srv.AdminConfig()
	cfg.QPS, cfg.Burst = -1, 0
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, n: n} }
	var err error
	main, err = kubeclient.NewForConfig(cfg)
	require.NoError(t, err)
	heartbeat, err = kubeclient.NewForConfig(lease.HeartbeatRESTConfig(rest.CopyConfig(cfg), 10*time.Second))
	require.NoError(t, err)
	return main, heartbeat
}

func ensureNamespace(t testing.TB, cs kubernetes.Interface, ns string) {
	_, err := cs.CoreV1().Namespaces().Create(context.Background(),
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ensureDefaultServiceAccount(t, cs, ns)
}

func vnodePod(ns, name, node string, grace int64, ann map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "vnodes"}, Annotations: ann},
		Spec: v1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}
}

// parallel runs fn(i) for i in [0, n) on workers goroutines.
func parallel(t testing.TB, n, workers int, fn func(i int) error) {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := atomic.Int64{}
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := fn(i); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(t, errors.Join(func() (all []error) {
		for e := range errs {
			all = append(all, e)
		}
		return
	}()...))
}

// readyNodes counts the nodes whose Ready condition has status want.
func readyNodes(t testing.TB, cs kubernetes.Interface, names []string, want v1.ConditionStatus) int {
	list, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: virtualnode.DefaultNodeLabel})
	require.NoError(t, err)
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	count := 0
	for _, n := range list.Items {
		for _, c := range n.Status.Conditions {
			if set[n.Name] && c.Type == v1.NodeReady && c.Status == want {
				count++
			}
		}
	}
	return count
}

// renewTimes reads the renewTime of each node's lease (zero if absent).
func renewTimes(t testing.TB, cs kubernetes.Interface, names []string) map[string]time.Time {
	list, err := cs.CoordinationV1().Leases(apiserver.NodeLeaseNamespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	got := make(map[string]time.Time, len(list.Items))
	for _, l := range list.Items {
		if l.Spec.RenewTime != nil {
			got[l.Name] = l.Spec.RenewTime.Time
		}
	}
	out := make(map[string]time.Time, len(names))
	for _, n := range names {
		out[n] = got[n]
	}
	return out
}

// podsRunningReady counts pods in ns that are Running and Ready.
func podsRunningReady(t testing.TB, cs kubernetes.Interface, ns string) (total, ready int) {
	list, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
	require.NoError(t, err)
	for i := range list.Items {
		if p := &list.Items[i]; p.Status.Phase == v1.PodRunning && podReady(p) {
			ready++
		}
	}
	return len(list.Items), ready
}

func podCount(t testing.TB, cs kubernetes.Interface, ns string) int {
	list, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	return len(list.Items)
}

func nodeNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%04d", prefix, i)
	}
	return names
}

// TestVirtualNodes runs 50 virtual nodes in-process against the apiserver
// and observes them only through the API. There is no controller-manager in
// the harness, so nothing turns the nodes NotReady after the agent stops:
// the test checks that their leases stop being renewed, which is what the
// node lifecycle controller acts on after its grace period.
func TestVirtualNodes(t *testing.T) {
	const nodes, pods, ns = 50, 200, "vnodes-e2e"
	admin := srv.AdminClient()
	ensureNamespace(t, admin, ns)
	var requests atomic.Int64
	client, heartbeat := vnodeClients(t, &requests)
	sim, err := simulated.New(simulated.Config{ReadyDelay: 500 * time.Millisecond})
	require.NoError(t, err)
	names := nodeNames("vn-e2e-", nodes)
	a, err := virtualnode.New(virtualnode.Config{Client: client, HeartbeatClient: heartbeat, Nodes: names, Provider: sim,
		CPU: 8, Pods: 20, LeaseDuration: 4 * time.Second, StatusUpdateFrequency: time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	start := time.Now()

	require.Eventually(t, func() bool { return readyNodes(t, admin, names, v1.ConditionTrue) == nodes },
		20*time.Second, 100*time.Millisecond, "all nodes register and turn Ready")
	t.Logf("%d nodes Ready after %v", nodes, time.Since(start).Round(time.Millisecond))
	n0, err := admin.CoreV1().Nodes().Get(ctx, names[0], metav1.GetOptions{})
	require.NoError(t, err)
	require.EqualValues(t, 8, n0.Status.Capacity.Cpu().Value())
	require.EqualValues(t, 20, n0.Status.Allocatable.Pods().Value())

	// Leases exist and renew (every second at a 4s duration).
	var first map[string]time.Time
	require.Eventually(t, func() bool {
		first = renewTimes(t, admin, names)
		for _, rt := range first {
			if rt.IsZero() {
				return false
			}
		}
		return true
	}, 10*time.Second, 100*time.Millisecond, "every node has a lease")
	require.Eventually(t, func() bool {
		for n, rt := range renewTimes(t, admin, names) {
			if !rt.After(first[n]) {
				return false
			}
		}
		return true
	}, 10*time.Second, 200*time.Millisecond, "every lease renews")

	// 200 pods bound by spec.nodeName, spread over the nodes.
	t0 := time.Now()
	ann := map[string]string{simulated.AnnotationStopAfter: "1h"} // ignore SIGTERM: killed at the grace period's end
	parallel(t, pods, 8, func(i int) error {
		_, err := admin.CoreV1().Pods(ns).Create(ctx, vnodePod(ns, fmt.Sprintf("p-%03d", i), names[i%nodes], 2, ann),
			metav1.CreateOptions{})
		return err
	})
	require.Eventually(t, func() bool { total, ready := podsRunningReady(t, admin, ns); return total == pods && ready == pods },
		30*time.Second, 200*time.Millisecond, "all pods Running and Ready")
	t.Logf("%d pods Running and Ready %v after creation started", pods, time.Since(t0).Round(time.Millisecond))
	p0, err := admin.CoreV1().Pods(ns).Get(ctx, "p-000", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "172.16.0.1", p0.Status.HostIP)
	require.NotEmpty(t, p0.Status.PodIP)
	require.Equal(t, v1.PodQOSBestEffort, p0.Status.QOSClass)

	// An unhealthy provider turns the nodes NotReady, and Ready again.
	sim.SetHealthy(errors.New("simulated provider down"))
	require.Eventually(t, func() bool { return readyNodes(t, admin, names, v1.ConditionFalse) == nodes },
		15*time.Second, 200*time.Millisecond, "nodes NotReady while the provider is unhealthy")
	sim.SetHealthy(nil)
	require.Eventually(t, func() bool { return readyNodes(t, admin, names, v1.ConditionTrue) == nodes },
		15*time.Second, 200*time.Millisecond, "nodes Ready again")

	// Graceful deletion: containers ignore SIGTERM, so each pod takes its
	// 2s grace period, then the agent deletes it with grace 0.
	t0 = time.Now()
	parallel(t, pods, 8, func(i int) error {
		return admin.CoreV1().Pods(ns).Delete(ctx, fmt.Sprintf("p-%03d", i), metav1.DeleteOptions{})
	})
	deleted := time.Since(t0)
	if deleted < 1500*time.Millisecond {
		require.Equal(t, pods, podCount(t, admin, ns), "no pod is gone before its grace period ends")
	}
	require.Eventually(t, func() bool { return podCount(t, admin, ns) == 0 }, 30*time.Second, 200*time.Millisecond,
		"all pods deleted")
	t.Logf("%d pods deleted %v after deletion started", pods, time.Since(t0).Round(time.Millisecond))
	require.Eventually(t, func() bool { return sim.Len() == 0 }, 5*time.Second, 50*time.Millisecond,
		"the provider forgot every pod")

	// Stop: Run returns, and the leases stop renewing.
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	stopped := time.Now()
	sim.Close()
	t.Logf("agent ran %v, %d API requests", time.Since(start).Round(time.Millisecond), requests.Load())
	time.Sleep(3 * time.Second) // three renew intervals
	// A renewal sent before the stop may still commit after it (the API
	// server finishes a request whose client gave up), but none carries a
	// renew time from after the stop.
	for name, renewed := range renewTimes(t, admin, names) {
		require.False(t, renewed.After(stopped), "lease %s renewed at %v, after the agent stopped at %v", name, renewed, stopped)
	}
}

// TestVirtualNodesScale (NODEKIT_VNODES_SCALE=1; run without -race) runs
// 1,000 virtual nodes and 10,000 pods for NODEKIT_VNODES_DURATION (default
// 2m) of steady state and logs the agent's figures. CPU is the whole process:
// the apiserver and etcd run in it too.
func TestVirtualNodesScale(t *testing.T) {
	if os.Getenv("NODEKIT_VNODES_SCALE") != "1" {
		t.Skip("set NODEKIT_VNODES_SCALE=1 to run")
	}
	const nodes, pods, ns = 1000, 10000, "vnodes-scale"
	steady := 2 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("NODEKIT_VNODES_DURATION")); err == nil {
		steady = d
	}
	admin := srv.AdminClient()
	ensureNamespace(t, admin, ns)
	var requests atomic.Int64
	client, heartbeat := vnodeClients(t, &requests)
	sim, err := simulated.New(simulated.Config{ReadyDelay: time.Second})
	require.NoError(t, err)
	defer sim.Close()
	reg := prometheus.NewRegistry()
	names := nodeNames("vn-scale-", nodes)
	a, err := virtualnode.New(virtualnode.Config{Client: client, HeartbeatClient: heartbeat, Nodes: names, Provider: sim,
		Registerer: reg})
	require.NoError(t, err)
	runtime.GC()
	g0 := runtime.NumGoroutine()
	heap0 := heapInuse()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	start := time.Now()
	require.Eventually(t, func() bool { return readyNodes(t, admin, names, v1.ConditionTrue) == nodes },
		2*time.Minute, time.Second, "all nodes Ready")
	t.Logf("%d nodes Ready after %v", nodes, time.Since(start).Round(time.Millisecond))

	t0 := time.Now()
	parallel(t, pods, 16, func(i int) error {
		_, err := admin.CoreV1().Pods(ns).Create(ctx, vnodePod(ns, fmt.Sprintf("p-%05d", i), names[i%nodes], 1, nil),
			metav1.CreateOptions{})
		return err
	})
	t.Logf("%d pods created in %v", pods, time.Since(t0).Round(time.Millisecond))
	require.Eventually(t, func() bool { _, ready := podsRunningReady(t, admin, ns); return ready == pods },
		5*time.Minute, 2*time.Second, "all pods Running and Ready")
	t.Logf("%d pods Running and Ready %v after creation started", pods, time.Since(t0).Round(time.Millisecond))

	// Steady state.
	runtime.GC()
	req0, cpu0, w0 := requests.Load(), cpuTime(), time.Now()
	var maxG int
	var maxHeap uint64
	for time.Since(w0) < steady {
		time.Sleep(5 * time.Second)
		maxG = max(maxG, runtime.NumGoroutine()-g0)
		maxHeap = max(maxHeap, heapInuse())
	}
	wall := time.Since(w0)
	cpu := cpuTime() - cpu0
	reqs := requests.Load() - req0
	runtime.GC()
	t.Logf("steady %v: process CPU %.3f cores (agent+apiserver+etcd), agent API requests %.1f/s, "+
		"agent goroutines max +%d, heap in use %.0f MiB after GC (was %.0f MiB before the agent; max %.0f MiB)",
		wall.Round(time.Second), cpu.Seconds()/wall.Seconds(), float64(reqs)/wall.Seconds(), maxG,
		float64(heapInuse())/(1<<20), float64(heap0)/(1<<20), float64(maxHeap)/(1<<20))

	t0 = time.Now()
	require.NoError(t, admin.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	require.Eventually(t, func() bool { return podCount(t, admin, ns) == 0 }, 5*time.Minute, 2*time.Second,
		"all pods deleted")
	t.Logf("%d pods deleted in %v (grace 1s)", pods, time.Since(t0).Round(time.Millisecond))

	cancel()
	require.NoError(t, <-done)
	count, late := lateRenewals(t, reg, 10)
	t.Logf("lease renewals %d, started late past the histogram bucket below 10s (1/4 duration), i.e. >8.2s: %d; total agent API requests %d in %v",
		count, late, requests.Load(), time.Since(start).Round(time.Second))
	require.Zero(t, late, "late lease renewals")
}

func heapInuse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// lateRenewals reads the lease lateness histogram: renewals, and those that
// started more than limit seconds late (by the bucket at or below limit, so
// it may count some a little under limit).
func lateRenewals(t testing.TB, reg *prometheus.Registry, limit float64) (count, late uint64) {
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "nodekit_lease_renew_lateness_seconds" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		var below uint64
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() <= limit {
				below = b.GetCumulativeCount()
			}
		}
		return h.GetSampleCount(), h.GetSampleCount() - below
	}
	t.Fatal("lateness histogram not found")
	return 0, 0
}
