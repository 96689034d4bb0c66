package podworkers

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
)

// countingSyncer is a no-op Syncer that counts calls and samples the peak
// number of goroutines.
type countingSyncer struct {
	synced, finished sync.WaitGroup
	peak             atomic.Int64
}

func (s *countingSyncer) sample() {
	n := int64(runtime.NumGoroutine())
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (s *countingSyncer) SyncPod(context.Context, UpdateType, *v1.Pod, *v1.Pod) (bool, error) {
	s.sample()
	s.synced.Done()
	return false, nil
}
func (s *countingSyncer) SyncTerminatingPod(context.Context, *v1.Pod, int64, StatusFunc) error {
	return nil
}
func (s *countingSyncer) SyncTerminatingRuntimePod(context.Context, *RuntimePod) error { return nil }
func (s *countingSyncer) SyncTerminatedPod(context.Context, *v1.Pod) error {
	s.sample()
	s.finished.Done()
	return nil
}

func benchPods(n int) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = newPod(fmt.Sprintf("uid-%d", i), fmt.Sprintf("pod-%d", i), "1")
	}
	return pods
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLifecycle10k creates 10,000 pods, syncs each once with a no-op
// syncer, kills them all and waits until all are finished and forgotten,
// under Run. One op is the whole cycle.
func BenchmarkLifecycle10k(b *testing.B) {
	for _, max := range []int{0, 64} {
		b.Run(fmt.Sprintf("MaxConcurrentSyncs=%d", max), func(b *testing.B) {
			const n = 10000
			pods := benchPods(n)
			ctx := klog.NewContext(context.Background(), logr.Discard())
			baseline := runtime.NumGoroutine()
			var peak int64
			cpu := cpuTime()
			b.ReportAllocs()
			for b.Loop() {
				s := &countingSyncer{}
				w, err := New(Config{Syncer: s, MaxConcurrentSyncs: max})
				if err != nil {
					b.Fatal(err)
				}
				idle := make(chan struct{}, 1)
				w.onIdle = func() {
					select {
					case idle <- struct{}{}:
					default:
					}
				}
				runCtx, cancel := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() { done <- w.Run(runCtx) }()
				s.synced.Add(n)
				s.finished.Add(n)
				for _, p := range pods {
					_ = w.UpdatePod(ctx, Update{Type: UpdateCreate, Pod: p})
				}
				s.synced.Wait()
				for _, p := range pods {
					_ = w.UpdatePod(ctx, Update{Type: UpdateKill, Pod: p})
				}
				s.finished.Wait()
				waitIdle(w, idle)
				if known := w.SyncKnownPods(ctx, nil); len(known) != 0 {
					b.Fatalf("%d pods left", len(known))
				}
				cancel()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				peak = max64(peak, s.peak.Load())
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
			b.ReportMetric(float64(peak-int64(baseline)), "peak-goroutines")
			b.ReportMetric(float64(runtime.NumGoroutine()-baseline), "goroutines-after")
		})
	}
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// BenchmarkIdleMemory10k measures the heap held per idle pod (synced once,
// waiting for its resync), excluding the pod objects themselves.
func BenchmarkIdleMemory10k(b *testing.B) { benchIdleMemory(b, false) }

// BenchmarkIdleMemoryDropped10k is BenchmarkIdleMemory10k for a host with
// Config.LookupPod, whose idle pods the workers drop (a virtual node agent).
func BenchmarkIdleMemoryDropped10k(b *testing.B) { benchIdleMemory(b, true) }

func benchIdleMemory(b *testing.B, lookup bool) {
	const n = 10000
	pods := benchPods(n)
	byUID := make(map[types.UID]*v1.Pod, n)
	for _, p := range pods {
		byUID[p.UID] = p
	}
	ctx := klog.NewContext(context.Background(), logr.Discard())
	var perPod float64
	for b.Loop() {
		s := &countingSyncer{}
		s.synced.Add(n)
		cfg := Config{Syncer: s}
		if lookup {
			cfg.LookupPod = func(uid types.UID) *v1.Pod { return byUID[uid] }
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		w, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range pods {
			_ = w.UpdatePod(ctx, Update{Type: UpdateCreate, Pod: p})
		}
		w.ProcessPending(ctx)
		runtime.GC()
		runtime.ReadMemStats(&after)
		perPod = float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(w)
	}
	b.ReportMetric(perPod, "B/idle-pod")
}

// waitIdle waits until w has no worker goroutine.
func waitIdle(w *Workers, idle <-chan struct{}) {
	for {
		w.mu.Lock()
		g := w.goroutines
		w.mu.Unlock()
		if g == 0 {
			return
		}
		<-idle
	}
}

// BenchmarkDuePods10k is the work queue's cost in a host's sync loop:
// 10,000 running pods resyncing about once a minute (the kubelet's 60 s
// plus up to 50% jitter); one op is a second of the loop: DuePods, then a
// resync of each pod it returned.
func BenchmarkDuePods10k(b *testing.B) {
	const n = 10000
	clk := clocktesting.NewFakeClock(epoch)
	seed := uint64(1)
	rnd := func() float64 { // deterministic, spread
		seed = seed*6364136223846793005 + 1442695040888963407
		return float64(seed>>11) / (1 << 53)
	}
	w, err := New(Config{Syncer: &noopSyncer{}, Clock: clk, Rand: rnd})
	if err != nil {
		b.Fatal(err)
	}
	ctx := klog.NewContext(context.Background(), logr.Discard())
	for _, p := range benchPods(n) {
		_ = w.UpdatePod(ctx, Update{Type: UpdateCreate, Pod: p})
	}
	w.ProcessPending(ctx)
	synced := 0
	b.ReportAllocs()
	for b.Loop() {
		clk.Step(time.Second)
		for _, uid := range w.DuePods() {
			_ = w.Resync(uid)
			synced++
		}
		w.ProcessPending(ctx)
	}
	b.ReportMetric(float64(synced)/float64(b.N), "resyncs/op")
}

// noopSyncer syncs nothing, successfully.
type noopSyncer struct{}

func (noopSyncer) SyncPod(context.Context, UpdateType, *v1.Pod, *v1.Pod) (bool, error) {
	return false, nil
}
func (noopSyncer) SyncTerminatingPod(context.Context, *v1.Pod, int64, StatusFunc) error { return nil }
func (noopSyncer) SyncTerminatingRuntimePod(context.Context, *RuntimePod) error         { return nil }
func (noopSyncer) SyncTerminatedPod(context.Context, *v1.Pod) error                     { return nil }
