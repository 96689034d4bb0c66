package syncloop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/prober"
)

// benchHandler measures, for each pod, the time from the first undispatched
// PLEG event to the HandlePodSyncs call that carries the pod.
type benchHandler struct {
	idx    map[types.UID]int
	stamps []atomic.Int64
	mu     sync.Mutex
	lat    []time.Duration
}

func (h *benchHandler) HandlePodAdditions(context.Context, []*v1.Pod) {}
func (h *benchHandler) HandlePodUpdates(context.Context, []*v1.Pod)   {}
func (h *benchHandler) HandlePodRemoves(context.Context, []*v1.Pod)   {}
func (h *benchHandler) HandlePodReconcile(context.Context, []*v1.Pod) {}
func (h *benchHandler) HandlePodCleanups(context.Context) error       { return nil }
func (h *benchHandler) HandlePodSyncs(_ context.Context, pods []*v1.Pod) {
	now := time.Now().UnixNano()
	for _, p := range pods {
		i, ok := h.idx[p.UID]
		if !ok {
			continue
		}
		if s := h.stamps[i].Swap(0); s != 0 {
			h.mu.Lock()
			h.lat = append(h.lat, time.Duration(now-s))
			h.mu.Unlock()
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDispatch1000Pods: 1,000 pods known to the loop, all channels
// busy: probe results arrive in bursts (20 every 1ms, ~20,000/s), a config
// snapshot of the 1,000 pods with one changed pod every 100ms, the sync tick
// every 10ms (10 pods due) and housekeeping every 20ms. One op = publish one
// PLEG event and wait until HandlePodSyncs has received its pod. Reports the
// p50/p99 publish→dispatch latency and the process CPU per op (loop,
// producers and handler together).
func BenchmarkDispatch1000Pods(b *testing.B) {
	const n = 1000
	pods := make([]*v1.Pod, n)
	h := &benchHandler{idx: map[types.UID]int{}, stamps: make([]atomic.Int64, n)}
	for i := range pods {
		pods[i] = testPod(fmt.Sprintf("p%04d", i), types.UID(fmt.Sprintf("u%04d", i)))
		h.idx[pods[i].UID] = i
	}
	due := make([]types.UID, 10)
	for i := range due {
		due[i] = pods[i].UID
	}
	snapshot := func(gen int) []*v1.Pod {
		out := make([]*v1.Pod, n)
		for i, p := range pods {
			out[i] = p.DeepCopy()
		}
		out[gen%n].Labels = map[string]string{"gen": fmt.Sprint(gen)}
		return out
	}
	l, err := New(Config{
		Handler: h, ExternalSources: []string{"api"},
		SyncPeriod: 10 * time.Millisecond, HousekeepingPeriod: 20 * time.Millisecond,
		PodsToSync: func() []types.UID { return due },
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.Set(ctx, "api", snapshot(0))
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	var bg sync.WaitGroup
	every := func(d time.Duration, f func(i int)) {
		bg.Go(func() {
			t := time.NewTicker(d)
			defer t.Stop()
			for i := 1; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					f(i)
				}
			}
		})
	}
	every(time.Millisecond, func(i int) {
		for k := range 20 {
			j := (i*20 + k) % n
			l.HandleProbeUpdate(prober.Readiness, prober.Update{ContainerID: containerid.ID{ID: fmt.Sprint(j)}, PodUID: pods[j].UID, Result: prober.Result(i % 2)})
		}
	})
	every(100*time.Millisecond, func(i int) { l.Set(ctx, "api", snapshot(i)) })

	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := range b.N {
		j := (i * 7) % n
		h.stamps[j].Store(time.Now().UnixNano())
		l.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: pods[j].UID, Type: pleg.ContainerStarted, ContainerID: containerid.ID{ID: "c"}})
		for h.stamps[j].Load() != 0 {
			runtime.Gosched()
		}
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	cancel()
	bg.Wait()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	slices.Sort(h.lat)
	if len(h.lat) > 0 {
		b.ReportMetric(float64(h.lat[len(h.lat)/2].Nanoseconds()), "p50-ns")
		b.ReportMetric(float64(h.lat[len(h.lat)*99/100].Nanoseconds()), "p99-ns")
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// staticPods prepares n file-source pods.
func staticPods(b *testing.B, n int) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	for i := range pods {
		p, err := parseStaticPod("bench", []byte(manifest(fmt.Sprintf("pod%04d", i), "img:1")), "node-a", kubetypes.FileSource)
		if err != nil {
			b.Fatal(err)
		}
		pods[i] = p
	}
	return pods
}

// BenchmarkFileSnapshotDiff1000: one op = diffing a 1,000-pod file-source
// snapshot against the previous one, unchanged or with one pod changed.
func BenchmarkFileSnapshotDiff1000(b *testing.B) {
	for _, changed := range []bool{false, true} {
		b.Run(fmt.Sprintf("changed=%v", changed), func(b *testing.B) {
			ctx := context.Background()
			pods := staticPods(b, 1000)
			alt, err := parseStaticPod("bench", []byte(manifest("pod0000", "img:2")), "node-a", kubetypes.FileSource)
			if err != nil {
				b.Fatal(err)
			}
			m := newMerger(time.Now, nil, func([]PodUpdate) {})
			m.set(ctx, kubetypes.FileSource, copyPods(pods))
			snaps := [2][]*v1.Pod{copyPods(pods), copyPods(pods)}
			if changed {
				snaps[1][0] = alt
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				m.set(ctx, kubetypes.FileSource, snaps[i%2])
			}
		})
	}
}

// BenchmarkFileSourceRescan1000: one op = a full re-read of a directory of
// 1,000 unchanged manifests (read and hash, no decoding) plus the snapshot
// copy and diff the loop would do.
func BenchmarkFileSourceRescan1000(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	for i := range 1000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("pod%04d.yaml", i)), []byte(manifest(fmt.Sprintf("pod%04d", i), "img:1")), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	s, err := NewFileSource(FileSourceConfig{Path: dir, NodeName: "node-a"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Scan(ctx, true); err != nil {
		b.Fatal(err)
	}
	m := newMerger(time.Now, nil, func([]PodUpdate) {})
	m.set(ctx, kubetypes.FileSource, s.Pods())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := s.Scan(ctx, true); err != nil {
			b.Fatal(err)
		}
		m.set(ctx, kubetypes.FileSource, s.Pods())
	}
}

// BenchmarkAPIServerEvent100: one op = one watch event (a pod's status
// changes) on a node with 100 pods, through the API server source's store
// and the merger, as the start of 100 pods makes several hundred of them.
func BenchmarkAPIServerEvent100(b *testing.B) {
	ctx := context.Background()
	m := newMerger(time.Now, nil, func([]PodUpdate) {})
	src := &APIServerSource{cfg: APIServerSourceConfig{NodeName: "node-a"}}
	store := cache.NewUndeltaStore(src.pusher(ctx, func(ctx context.Context, pods []*v1.Pod) {
		m.set(ctx, kubetypes.APIServerSource, pods)
	}), cache.MetaNamespaceKeyFunc)
	pods := make([]*v1.Pod, 100)
	for i := range pods {
		pods[i] = testPod(fmt.Sprintf("p%03d", i), types.UID(fmt.Sprintf("u%03d", i)))
		pods[i].Namespace = "ns"
		pods[i].ResourceVersion = "1"
		if err := store.Add(pods[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	rv := 1
	for b.Loop() {
		rv++
		p := pods[rv%len(pods)].DeepCopy()
		p.ResourceVersion = fmt.Sprint(rv)
		p.Status.Phase = []v1.PodPhase{v1.PodPending, v1.PodRunning}[rv%2]
		if err := store.Update(p); err != nil {
			b.Fatal(err)
		}
	}
}
