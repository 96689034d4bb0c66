package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	chlease "k8s.io/component-helpers/apimachinery/lease"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/lease"
	"github.com/nodekit/nodekit/test/apiserver"
)

// meter counts the requests and bytes (request + response bodies) that go
// through a client, and the lease updates among them.
type meter struct {
	next     http.RoundTripper
	requests atomic.Int64
	updates  atomic.Int64
	bytes    atomic.Int64
}

func (m *meter) RoundTrip(r *http.Request) (*http.Response, error) {
	m.requests.Add(1)
	if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/leases/") {
		m.updates.Add(1)
	}
	if r.ContentLength > 0 {
		m.bytes.Add(r.ContentLength)
	}
	resp, err := m.next.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &m.bytes}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func meteredNodeClient(b testing.TB, name string) (kubernetes.Interface, *meter) {
	cfg := srv.NodeConfig(name)
	m := &meter{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { m.next = rt; return m }
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return cs, m
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// report prints per-renewal and per-node-hour figures. CPU is the whole
// process (client and the in-process apiserver), the same for both sides.
func report(b *testing.B, m *meter, renewals int64, cpu time.Duration) {
	perHour := float64(time.Hour / (10 * time.Second)) // renewals per node-hour at the default interval
	b.ReportMetric(float64(m.requests.Load())/float64(renewals), "req/renewal")
	b.ReportMetric(float64(m.bytes.Load())/float64(renewals), "B-wire/renewal")
	b.ReportMetric(float64(m.requests.Load())/float64(renewals)*perHour, "req/node-hour")
	b.ReportMetric(float64(m.bytes.Load())/float64(renewals)*perHour/1024, "KiB-wire/node-hour")
	b.ReportMetric(float64(cpu.Microseconds())/float64(renewals), "cpu-µs/renewal")
}

// BenchmarkLeaseSteadyState compares nodekit's lease controller with
// k8s.io/component-helpers' (wired like the kubelet, with its owner-setting
// post-process func) on the same apiserver, as node identities.
func BenchmarkLeaseSteadyState(b *testing.B) {
	ctx := context.Background()
	b.Run("nodekit", func(b *testing.B) {
		name := fmt.Sprintf("bench-nk-%d", b.N)
		cs, m := meteredNodeClient(b, name)
		createNodeB(b, cs, name)
		clk := clocktesting.NewFakeClock(time.Now())
		ctl, err := lease.New(lease.Config{Client: clientset.Wrap(cs), NodeName: name, Clock: clk,
			NodeUID: lease.NodeUIDFromAPI(clientset.Wrap(cs))})
		if err != nil {
			b.Fatal(err)
		}
		if err := ctl.Renew(ctx, name); err != nil { // create
			b.Fatal(err)
		}
		m.requests.Store(0)
		m.bytes.Store(0)
		cpu0 := cpuTime()
		b.ResetTimer()
		for range b.N {
			clk.Step(10 * time.Second)
			if err := ctl.Renew(ctx, name); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		report(b, m, int64(b.N), cpuTime()-cpu0)
	})
	b.Run("component-helpers", func(b *testing.B) {
		name := fmt.Sprintf("bench-ch-%d", b.N)
		cs, m := meteredNodeClient(b, name)
		createNodeB(b, cs, name)
		ctl := chlease.NewController(clock.RealClock{}, cs, name, 40, nil, time.Millisecond,
			name, apiserver.NodeLeaseNamespace, ownerFunc(cs, name))
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan struct{})
		// Let it create the lease first, then measure b.N renewals.
		go func() { defer close(done); ctl.Run(runCtx) }()
		for m.updates.Load() < 1 {
			time.Sleep(time.Millisecond)
		}
		start := m.updates.Load()
		m.requests.Store(0)
		m.bytes.Store(0)
		cpu0 := cpuTime()
		b.ResetTimer()
		for m.updates.Load() < start+int64(b.N) {
			time.Sleep(100 * time.Microsecond)
		}
		cancel()
		<-done
		b.StopTimer()
		report(b, m, m.updates.Load()-start, cpuTime()-cpu0)
	})
}

// ownerFunc sets the owner reference the way the kubelet does: GET the
// Node whenever the lease has no owner yet.
func ownerFunc(cs kubernetes.Interface, name string) chlease.ProcessLeaseFunc {
	return func(l *coordinationv1.Lease) error {
		if len(l.OwnerReferences) > 0 {
			return nil
		}
		n, err := cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: n.UID}}
		return nil
	}
}

func createNodeB(b *testing.B, cs kubernetes.Interface, name string) {
	if _, err := cs.CoreV1().Nodes().Create(context.Background(), nodeObj(name), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkLeaseManyNodes runs one controller for 2,000 node names against
// the apiserver for two minutes
// and reports the worst lateness of any renewal; it fails if a renewal
// started more than 8.192s (the histogram bucket below a quarter of the
// lease duration, 10s) past schedule.
func BenchmarkLeaseManyNodes(b *testing.B) {
	const n = 2000
	const duration = 2 * time.Minute
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("many-%04d", i)
	}
	reg := prometheus.NewRegistry()
	cfg := srv.AdminConfig()
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctl, err := lease.New(lease.Config{Client: clientset.Wrap(cs), Names: names,
		InitialSpread: 10 * time.Second, Registerer: reg, Workers: 16})
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), duration)
		cpu0 := cpuTime()
		if err := ctl.Run(ctx); err != nil {
			b.Fatal(err)
		}
		cpu := cpuTime() - cpu0
		cancel()
		count, over, worst := lateness(b, reg, 8.192)
		b.ReportMetric(float64(count), "renewals")
		b.ReportMetric(float64(over), "late>8.2s")
		b.ReportMetric(worst, "worst-late-bucket-s")
		b.ReportMetric(float64(cpu.Microseconds())/float64(count), "cpu-µs/renewal(with-apiserver)")
		if over > 0 {
			b.Fatalf("%d of %d renewals started more than 8.2s late (goal: none over 10s)", over, count)
		}
	}
}

// lateness reads the lateness histogram: total count, count above limit
// seconds, and the upper bound of the highest non-empty bucket.
func lateness(b *testing.B, reg *prometheus.Registry, limit float64) (uint64, uint64, float64) {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "nodekit_lease_renew_lateness_seconds" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		var below uint64
		worst := 0.0
		var prev uint64
		for _, bk := range h.GetBucket() {
			if bk.GetUpperBound() <= limit {
				below = bk.GetCumulativeCount()
			}
			if bk.GetCumulativeCount() > prev {
				worst = bk.GetUpperBound()
			}
			prev = bk.GetCumulativeCount()
		}
		if h.GetSampleCount() > prev {
			worst = h.GetSampleSum() // beyond the last bucket
		}
		return h.GetSampleCount(), h.GetSampleCount() - below, worst
	}
	b.Fatal("lateness histogram not found")
	return 0, 0, 0
}
