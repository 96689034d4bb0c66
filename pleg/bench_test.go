package pleg

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/nodekit/nodekit/crisim"
)

// fakeRuntime is an in-process RuntimeService over fixed listings, so the
// steady-state benchmark measures the generator, not gRPC.
type fakeRuntime struct {
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
}

func newFakeRuntime(pods, perPod int) *fakeRuntime {
	f := &fakeRuntime{}
	for p := range pods {
		uid := fmt.Sprintf("uid-%04d", p)
		sb := fmt.Sprintf("%064x", p)
		f.sandboxes = append(f.sandboxes, &runtimeapi.PodSandbox{
			Id: sb, State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: int64(p + 1),
			Metadata: &runtimeapi.PodSandboxMetadata{Name: fmt.Sprint("pod", p), Namespace: "default", Uid: uid},
			Labels:   map[string]string{PodUIDLabel: uid},
		})
		for c := range perPod {
			f.containers = append(f.containers, &runtimeapi.Container{
				Id: fmt.Sprintf("%032x%032x", p, c+1), PodSandboxId: sb, State: runtimeapi.ContainerState_CONTAINER_RUNNING,
				Metadata: &runtimeapi.ContainerMetadata{Name: fmt.Sprint("c", c)}, CreatedAt: int64(p + 1),
				Labels: map[string]string{PodUIDLabel: uid},
			})
		}
	}
	return f
}

func (f *fakeRuntime) ListPodSandbox(_ context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	if filter == nil {
		return f.sandboxes, nil
	}
	var out []*runtimeapi.PodSandbox
	for _, s := range f.sandboxes {
		if labelsMatch(s.Labels, filter.LabelSelector) {
			out = append(out, s)
		}
	}
	return out, nil
}

func (f *fakeRuntime) ListContainers(_ context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	if filter == nil {
		return f.containers, nil
	}
	var out []*runtimeapi.Container
	for _, c := range f.containers {
		if (filter.PodSandboxId == "" || filter.PodSandboxId == c.PodSandboxId) && labelsMatch(c.Labels, filter.LabelSelector) {
			out = append(out, c)
		}
	}
	return out, nil
}

func labelsMatch(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (f *fakeRuntime) PodSandboxStatus(_ context.Context, id string, _ bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	for _, s := range f.sandboxes {
		if s.Id == id {
			return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{Id: id, Metadata: s.Metadata, State: s.State, CreatedAt: s.CreatedAt}}, nil
		}
	}
	return nil, fmt.Errorf("sandbox %s not found", id)
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id, State: runtimeapi.ContainerState_CONTAINER_RUNNING}}, nil
}

func (f *fakeRuntime) GetContainerEvents(ctx context.Context, _ chan *runtimeapi.ContainerEventResponse, _ func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	<-ctx.Done()
	return ctx.Err()
}

// BenchmarkRelistSteadyFake: 1,000 pods × 3 containers, nothing changes,
// in-process runtime: the generator's own CPU and allocations per relist.
func BenchmarkRelistSteadyFake(b *testing.B) {
	g, err := New(Config{Runtime: newFakeRuntime(1000, 3), EventChannelCapacity: 5000})
	require.NoError(b, err)
	ctx := context.Background()
	_, err = g.Relist(ctx) // first listing: every pod is new
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := g.Relist(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// benchEnv is crisim on the real clock, reached through cri-client.
func benchEnv(b *testing.B, streaming bool) (*crisim.Sim, internalapi.RuntimeService, *env) {
	b.Helper()
	dir, err := os.MkdirTemp("", "plegbench")
	require.NoError(b, err)
	sim := crisim.New(crisim.Config{Images: []crisim.Image{{Ref: pauseImage}, {Ref: appImage}}, EventBuffer: 100000})
	endpoint, stop, err := sim.ListenAndServe(filepath.Join(dir, "cri.sock"))
	require.NoError(b, err)
	ctx := context.Background()
	rt, err := remote.NewRemoteRuntimeService(ctx, endpoint, time.Minute, nil, streaming)
	require.NoError(b, err)
	b.Cleanup(func() {
		_ = rt.Close(ctx)
		stop()
		_ = os.RemoveAll(dir)
	})
	return sim, rt, &env{sim: sim, rt: rt}
}

// populate creates pods (named prefix0…) with perPod running containers
// each and returns their sandbox and container IDs.
func populate(b *testing.B, e *env, prefix string, pods, perPod int) (sandboxes, containers []string) {
	b.Helper()
	for p := range pods {
		name := fmt.Sprint(prefix, p)
		sb := e.runPod(b, name)
		sandboxes = append(sandboxes, sb)
		for c := range perPod {
			containers = append(containers, e.startContainer(b, sb, name, fmt.Sprint("c", c)))
		}
	}
	return sandboxes, containers
}

// BenchmarkRelistSteadyCRI: 1,000 pods × 3 containers, nothing changes,
// over cri-client and a unix socket (crisim): CPU per relist including gRPC.
func BenchmarkRelistSteadyCRI(b *testing.B) {
	_, rt, e := benchEnv(b, false)
	populate(b, e, "pod", 1000, 3)
	g, err := New(Config{Runtime: rt, EventChannelCapacity: 5000})
	require.NoError(b, err)
	ctx := context.Background()
	_, err = g.Relist(ctx)
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := g.Relist(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRelist100Changed20ms: 100 pods (1 sandbox + 3 containers each)
// appear at once; every PodSandboxStatus and ContainerStatus call takes
// 20ms (crisim latency on the real clock). One op is one Relist, which
// returns once every event is delivered.
func BenchmarkRelist100Changed20ms(b *testing.B) {
	for _, p := range []int{1, DefaultStatusParallelism, 64} {
		b.Run(fmt.Sprint("parallelism=", p), func(b *testing.B) {
			sim, rt, e := benchEnv(b, false)
			g, err := New(Config{Runtime: rt, EventChannelCapacity: 5000, StatusParallelism: p})
			require.NoError(b, err)
			ctx := context.Background()
			round := 0
			for b.Loop() {
				b.StopTimer()
				sim.ClearFaults()
				sandboxes, _ := populate(b, e, fmt.Sprint("r", round, "-"), 100, 3)
				round++
				sim.Inject("PodSandboxStatus", crisim.Fault{Latency: 20 * time.Millisecond})
				sim.Inject("ContainerStatus", crisim.Fault{Latency: 20 * time.Millisecond})
				b.StartTimer()

				res, err := g.Relist(ctx)
				if err != nil || res.Failed > 0 || len(drain(g)) != 400 {
					b.Fatalf("relist: %+v %v", res, err)
				}

				b.StopTimer()
				sim.ClearFaults()
				for _, sb := range sandboxes {
					require.NoError(b, rt.RemovePodSandbox(ctx, sb))
				}
				_, err = g.Relist(ctx) // absorb the removals
				require.NoError(b, err)
				drain(g)
				b.StartTimer()
			}
		})
	}
}

// BenchmarkEventedLatency: evented Run over crisim with 1,000 pods × 3
// containers present; each op exits one running container in the runtime
// and waits for ContainerDied on Events. Reports p50 and p99.
func BenchmarkEventedLatency(b *testing.B) {
	sim, rt, e := benchEnv(b, false)
	sandboxes, _ := populate(b, e, "pod", 1000, 3)
	g, err := New(Config{Runtime: rt, Evented: true, EventChannelCapacity: 5000})
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		<-done
	})
	for !g.streamUp.Load() {
		select {
		case <-g.Events():
		case <-time.After(time.Millisecond):
		}
	}
	// Drain the initial relist.
	for {
		select {
		case <-g.Events():
			continue
		case <-time.After(200 * time.Millisecond):
		}
		break
	}
	var lat []time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		p := i % len(sandboxes)
		id := e.startContainer(b, sandboxes[p], fmt.Sprint("pod", p), fmt.Sprint("x", i))
		i++
		for ev := range g.Events() {
			if ev.Type == ContainerStarted && ev.ContainerID.ID == id {
				break
			}
		}
		b.StartTimer()
		start := time.Now()
		require.NoError(b, sim.ExitContainer(id, 0, ""))
		for ev := range g.Events() {
			if ev.Type == ContainerDied && ev.ContainerID.ID == id {
				break
			}
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
