package sidebyside

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	httpprobe "k8s.io/kubernetes/pkg/probe/http"
	tcpprobe "k8s.io/kubernetes/pkg/probe/tcp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/prober"
)

// healthServer is an in-process loopback HTTP server answering "ok" (its
// CPU counts for both sides).
func healthServer(b *testing.B) int {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	b.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port
}

// tcpServer accepts and closes connections.
func tcpServer(b *testing.B) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	b.Cleanup(func() { _ = ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// nodekitProbe returns a func that runs one scheduled probe of a
// single-container pod through the prober Manager (schedule, status lookup,
// probe, thresholds, result) on a fake clock.
func nodekitProbe(b *testing.B, handler v1.ProbeHandler) func() {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	m, err := prober.New(prober.Config{Clock: clk, Rand: func() float64 { return 0 }, Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-p"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", LivenessProbe: &v1.Probe{ProbeHandler: handler, PeriodSeconds: 10, TimeoutSeconds: 1}}}}}
	if err := m.AddPod(pod); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	m.UpdatePodStatus(ctx, pod, &v1.PodStatus{Phase: v1.PodRunning, PodIP: "127.0.0.1", ContainerStatuses: []v1.ContainerStatus{{
		Name: "app", ContainerID: "sim://c1", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(clk.Now())}}}}})
	m.RunOnce(ctx)
	return func() {
		clk.Step(10 * time.Second)
		if m.RunOnce(ctx) != 1 {
			b.Fatal("no probe ran")
		}
	}
}

func BenchmarkHTTPProbe(b *testing.B) {
	port := healthServer(b)
	action := &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(int32(port))}
	b.Run("upstream", func(b *testing.B) {
		p := httpprobe.New(false)
		req, err := httpprobe.NewRequestForHTTPGetAction(action, &v1.Container{}, "127.0.0.1", "probe")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := p.Probe(req, time.Second); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("nodekit", func(b *testing.B) {
		run := nodekitProbe(b, v1.ProbeHandler{HTTPGet: action})
		b.ReportAllocs()
		for b.Loop() {
			run()
		}
	})
}

func BenchmarkTCPProbe(b *testing.B) {
	port := tcpServer(b)
	b.Run("upstream", func(b *testing.B) {
		p := tcpprobe.New()
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := p.Probe("127.0.0.1", port, time.Second); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("nodekit", func(b *testing.B) {
		run := nodekitProbe(b, v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}})
		b.ReportAllocs()
		for b.Loop() {
			run()
		}
	})
}
