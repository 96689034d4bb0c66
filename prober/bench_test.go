package prober

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// cpuTime is the user+system CPU time the process has used.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process CPU time per op since start (server
// included: it runs in the test process).
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

// healthServer is the loopback target of the benchmarks: net/http's
// server answering every GET with 200 and "ok".
func healthServer(tb testing.TB) (string, int) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	tb.Cleanup(srv.Close)
	return hostPort(tb, srv.Listener.Addr().String())
}

// BenchmarkHTTPProbe times one HTTP GET probe of http://127.0.0.1:<port>/healthz
// as a worker runs it: timeout timer, dial, request, response, close.
func BenchmarkHTTPProbe(b *testing.B) {
	host, port := healthServer(b)
	n := realNet()
	ht, err := compileHTTP(&v1.HTTPGetAction{Path: "/healthz", Port: intPort(port)})
	if err != nil {
		b.Fatal(err)
	}
	var cached []byte
	b.ReportAllocs()
	start := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		ctx, release := n.withTimeout(context.Background(), time.Second)
		out, msg, req := n.probeHTTP(ctx, ht, host, port, time.Second, cached)
		release()
		cached = req
		if out != success {
			b.Fatal(msg)
		}
	}
	reportCPU(b, start)
}

// BenchmarkTCPProbe times one TCP probe of 127.0.0.1:<port>, whose
// listener accepts and closes every connection.
func BenchmarkTCPProbe(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	addr := l.Addr().String()
	n := realNet()
	b.ReportAllocs()
	start := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		ctx, release := n.withTimeout(context.Background(), time.Second)
		out, msg := n.probeTCP(ctx, addr)
		release()
		if out != success {
			b.Fatal(msg)
		}
	}
	reportCPU(b, start)
}

// BenchmarkManagerHTTPProbe times a whole scheduled HTTP liveness probe:
// step the fake clock one period, RunOnce (schedule, status lookup, probe,
// thresholds, result).
func BenchmarkManagerHTTPProbe(b *testing.B) {
	_, port := healthServer(b)
	e := newEnv(b)
	pod := testPod("p", &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intPort(port)}}}, nil, nil)
	if err := e.m.AddPod(pod); err != nil {
		b.Fatal(err)
	}
	e.m.UpdatePodStatus(e.ctx, pod, runningStatus(cid, epoch))
	e.step(0)
	b.ReportAllocs()
	start := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		if e.step(10*time.Second) != 1 {
			b.Fatal("no probe ran")
		}
	}
	reportCPU(b, start)
}
