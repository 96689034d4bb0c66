package eviction

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// benchHost builds n pods with varied requests, priorities and usage and a
// summary under memory pressure whose samples carry no timestamp (always
// fresh), so every pass evicts.
func benchHost(n int) *fakeHost {
	h := &fakeHost{}
	var stats []statsapi.PodStats
	for i := range n {
		p := newPod(fmt.Sprintf("pod-%d", i), withMemRequest(fmt.Sprintf("%dMi", 64+i%7*32)), withPriority(int32(i%5)))
		h.pods = append(h.pods, p)
		stats = append(stats, podStats(p, podUsage{mem: uint64(50+i%97) * Mi, rootfs: Mi, logs: Mi, procs: 10}))
	}
	nd := healthyNode()
	nd.memAvail = 50 * Mi
	h.summary = nd.summary(stats...)
	return h
}

// BenchmarkSynchronize500Pods is one full pass with 500 pods under memory
// pressure: observe, evaluate, rank, build the message and kill one pod.
func BenchmarkSynchronize500Pods(b *testing.B) {
	h := benchHost(500)
	m, err := New(Config{Summary: h, ActivePods: h.activePods,
		KillPod: func(context.Context, *v1.Pod, int64, func(*v1.PodStatus)) error { return nil },
		Clock:   clocktesting.NewFakeClock(epoch)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := klog.NewContext(context.Background(), logr.Discard())
	b.ReportAllocs()
	for b.Loop() {
		res, err := m.Synchronize(ctx)
		if err != nil || res.Evicted == nil {
			b.Fatalf("no eviction: %v", err)
		}
	}
}

// BenchmarkDetectionLatency measures the time from a threshold crossing to
// the KillPod call.
//   - notifier: real clock; the crossing is signalled through Trigger (as a
//     PSI notifier does); ns/op is the wall-clock latency.
//   - polling: fake clock, no notifier; the crossing happens just after a
//     pass and is found by the next periodic pass. Reported as
//     fake-s/detection.
func BenchmarkDetectionLatency(b *testing.B) {
	b.Run("notifier", func(b *testing.B) {
		h := benchHost(50)
		kills := make(chan struct{}, 1)
		m, err := New(Config{Summary: h, ActivePods: h.activePods, Clock: clock.RealClock{},
			KillPod: func(context.Context, *v1.Pod, int64, func(*v1.PodStatus)) error { kills <- struct{}{}; return nil }})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		<-kills // the first pass
		b.ResetTimer()
		for b.Loop() {
			m.Trigger()
			<-kills
		}
		b.StopTimer()
		cancel()
		<-done
	})
	b.Run("polling", func(b *testing.B) {
		h := benchHost(50)
		fc := clocktesting.NewFakeClock(epoch)
		kills := make(chan time.Time, 1)
		m, err := New(Config{Summary: h, ActivePods: h.activePods, Clock: fc,
			KillPod: func(context.Context, *v1.Pod, int64, func(*v1.PodStatus)) error { kills <- fc.Now(); return nil }})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		<-kills
		var total time.Duration
		for b.Loop() {
			for !fc.HasWaiters() {
				time.Sleep(10 * time.Microsecond)
			}
			crossed := fc.Now()
			for stepped := time.Duration(0); ; {
				select {
				case at := <-kills:
					total += at.Sub(crossed)
				default:
					fc.Step(100 * time.Millisecond)
					stepped += 100 * time.Millisecond
					if stepped <= 2*DefaultMonitoringInterval {
						time.Sleep(10 * time.Microsecond)
						continue
					}
					b.Fatal("no detection")
				}
				break
			}
		}
		b.ReportMetric(total.Seconds()/float64(b.N), "fake-s/detection")
		cancel()
		<-done
	})
}
