package cri_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	fakeapi "k8s.io/cri-api/pkg/apis/testing"

	"github.com/nodekit/nodekit/kubeletapi/cri"
)

// benchLog writes a CRI-format log of about size bytes (lines of 100
// bytes of text) and returns its path.
func benchLog(b *testing.B, size int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "0.log")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	text := make([]byte, 100)
	for i := range text {
		text[i] = 'a' + byte(i%26)
	}
	for n := 0; n < size; {
		k, _ := fmt.Fprintf(w, "2026-11-24T07:00:00.%09dZ stdout F %s\n", n%1_000_000_000, text)
		n += k
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

func benchRuntime(b *testing.B, logPath string, state runtimeapi.ContainerState) (*cri.Runtime, *v1.Pod) {
	b.Helper()
	fake := fakeapi.NewFakeRuntimeService()
	fake.SetFakeContainers([]*fakeapi.FakeContainer{{ContainerStatus: runtimeapi.ContainerStatus{
		Id: "cid", State: state, LogPath: logPath,
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
		Labels:   map[string]string{cri.LabelPodUID: podUID, cri.LabelContainerName: "c"},
	}}})
	rt, err := cri.New(cri.Config{Runtime: fake})
	if err != nil {
		b.Fatal(err)
	}
	st := &v1.ContainerStatus{ContainerID: "containerd://cid"}
	if state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		st.State.Running = &v1.ContainerStateRunning{}
	} else {
		st.State.Terminated = terminated("containerd://cid")
	}
	return rt, podWith(st)
}

// BenchmarkContainerLogs100MiB reads a 100 MiB CRI log through the path
// /containerLogs serves (parsing every line, writing the text); compare
// with BenchmarkRawCopy100MiB, the physical bound (cat).
func BenchmarkContainerLogs100MiB(b *testing.B) {
	path := benchLog(b, 100<<20)
	rt, pod := benchRuntime(b, path, runtimeapi.ContainerState_CONTAINER_EXITED)
	fi, _ := os.Stat(path)
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := rt.ContainerLogs(context.Background(), pod, "c", &v1.PodLogOptions{}, io.Discard, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawCopy100MiB copies the same file to io.Discard.
func BenchmarkRawCopy100MiB(b *testing.B) {
	path := benchLog(b, 100<<20)
	fi, _ := os.Stat(path)
	b.SetBytes(fi.Size())
	b.ResetTimer()
	for range b.N {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, f); err != nil {
			b.Fatal(err)
		}
		_ = f.Close()
	}
}

// firstByte signals once when something is written.
type firstByte struct {
	once sync.Once
	ch   chan struct{}
}

func (w *firstByte) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.ch) })
	return len(p), nil
}

// BenchmarkFollowStreams opens 100 follow streams on a running container
// and reports the heap and goroutines each one holds while idle.
func BenchmarkFollowStreams(b *testing.B) {
	const streams = 100
	path := benchLog(b, 4<<10)
	rt, pod := benchRuntime(b, path, runtimeapi.ContainerState_CONTAINER_RUNNING)
	for range b.N {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range streams {
			w := &firstByte{ch: make(chan struct{})}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = rt.ContainerLogs(ctx, pod, "c", &v1.PodLogOptions{Follow: true}, w, io.Discard)
			}()
			select {
			case <-w.ch:
			case <-time.After(10 * time.Second):
				b.Fatal("no first byte")
			}
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/streams, "heap-B/stream")
		b.ReportMetric(float64(runtime.NumGoroutine()-g0)/streams, "goroutines/stream")
		cancel()
		wg.Wait()
	}
}
