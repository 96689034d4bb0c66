package sidebyside

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	upstreampleg "k8s.io/kubernetes/pkg/kubelet/pleg"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/pleg"
)

// simRuntime is crisim over a unix socket, reached through cri-client.
func simRuntime(b *testing.B) (*crisim.Sim, criapi.RuntimeService) {
	dir, err := os.MkdirTemp("", "sidebyside")
	require.NoError(b, err)
	sim := crisim.New(crisim.Config{Images: []crisim.Image{{Ref: "pause"}, {Ref: "app"}}, EventBuffer: 100000})
	endpoint, stop, err := sim.ListenAndServe(filepath.Join(dir, "cri.sock"))
	require.NoError(b, err)
	rt, err := remote.NewRemoteRuntimeService(context.Background(), endpoint, time.Minute, nil, false)
	require.NoError(b, err)
	b.Cleanup(func() { _ = rt.Close(context.Background()); stop(); _ = os.RemoveAll(dir) })
	return sim, rt
}

// populate starts pods × perPod running containers with a prefix.
func populate(b *testing.B, rt criapi.RuntimeService, prefix string, pods, perPod int) []string {
	ctx := context.Background()
	var sbs []string
	for p := range pods {
		name := fmt.Sprint(prefix, p)
		cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
			Labels: map[string]string{podUIDLabel: "uid-" + name}}
		sb, err := rt.RunPodSandbox(ctx, cfg, "")
		require.NoError(b, err)
		sbs = append(sbs, sb)
		for c := range perPod {
			id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: fmt.Sprint("c", c)},
				Image: &runtimeapi.ImageSpec{Image: "app"}, Labels: map[string]string{podUIDLabel: "uid-" + name}}, cfg)
			require.NoError(b, err)
			require.NoError(b, rt.StartContainer(ctx, id))
		}
	}
	return sbs
}

func upstreamPLEG(rt criapi.RuntimeService) (*upstreampleg.GenericPLEG, chan *upstreampleg.PodLifecycleEvent) {
	ch := make(chan *upstreampleg.PodLifecycleEvent, 5000)
	g := upstreampleg.NewGenericPLEG(klog.Background(), &upstreamRuntime{rt: rt}, ch,
		&upstreampleg.RelistDuration{RelistPeriod: time.Second, RelistThreshold: 3 * time.Minute}, kubecontainer.NewCache(), clock.RealClock{}).(*upstreampleg.GenericPLEG)
	return g, ch
}

func drainUpstream(ch chan *upstreampleg.PodLifecycleEvent) int {
	n := 0
	for {
		select {
		case <-ch:
			n++
		default:
			return n
		}
	}
}

func drainNodekit(g *pleg.Generator) int {
	n := 0
	for {
		select {
		case <-g.Events():
			n++
		default:
			return n
		}
	}
}

// BenchmarkPLEGSteadyRelist: 1,000 pods × 3 running containers, nothing
// changes; one op is one relist over cri-client and the simulator (whose
// CPU, in-process, counts for both).
func BenchmarkPLEGSteadyRelist(b *testing.B) {
	_, rt := simRuntime(b)
	populate(b, rt, "pod", 1000, 3)
	steadyRelists(b, rt)
}

// steadyRelists times upstream's and nodekit's relist of an unchanging
// runtime, after one untimed relist each.
func steadyRelists(b *testing.B, rt criapi.RuntimeService) {
	b.Run("upstream", func(b *testing.B) {
		g, ch := upstreamPLEG(rt)
		g.Relist()
		drainUpstream(ch)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			g.Relist()
		}
	})
	b.Run("nodekit", func(b *testing.B) {
		g, err := pleg.New(pleg.Config{Runtime: rt, EventChannelCapacity: 5000})
		require.NoError(b, err)
		ctx := context.Background()
		_, err = g.Relist(ctx)
		require.NoError(b, err)
		drainNodekit(g)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := g.Relist(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPLEG100Changed20ms: 100 new pods × 3 containers appear at once
// and every PodSandboxStatus and ContainerStatus call takes 20ms; one op is
// one relist, timed until all 400 ContainerStarted events are delivered.
func BenchmarkPLEG100Changed20ms(b *testing.B) {
	type relister struct {
		name   string
		relist func(b *testing.B) int
	}
	for _, mk := range []func(rt criapi.RuntimeService) relister{
		func(rt criapi.RuntimeService) relister {
			g, ch := upstreamPLEG(rt)
			return relister{"upstream", func(*testing.B) int { g.Relist(); return drainUpstream(ch) }}
		},
		func(rt criapi.RuntimeService) relister {
			g, _ := pleg.New(pleg.Config{Runtime: rt, EventChannelCapacity: 5000})
			return relister{"nodekit", func(b *testing.B) int {
				_, err := g.Relist(context.Background())
				require.NoError(b, err)
				return drainNodekit(g)
			}}
		},
	} {
		sim, rt := simRuntime(b)
		r := mk(rt)
		r.relist(b)
		b.Run(r.name, func(b *testing.B) {
			round := 0
			for b.Loop() {
				b.StopTimer()
				sbs := populate(b, rt, fmt.Sprint("r", round, "-"), 100, 3)
				round++
				sim.Inject("PodSandboxStatus", crisim.Fault{Latency: 20 * time.Millisecond})
				sim.Inject("ContainerStatus", crisim.Fault{Latency: 20 * time.Millisecond})
				b.StartTimer()
				if n := r.relist(b); n < 300 {
					b.Fatalf("%d events", n)
				}
				b.StopTimer()
				sim.ClearFaults()
				for _, sb := range sbs {
					require.NoError(b, rt.RemovePodSandbox(context.Background(), sb))
				}
				r.relist(b)
				b.StartTimer()
			}
		})
	}
}

// listRuntime answers the two list calls from prebuilt slices, so a steady
// relist measures the PLEG itself rather than gRPC decoding.
type listRuntime struct {
	criapi.RuntimeService // other methods are not called in a steady relist
	sandboxes             []*runtimeapi.PodSandbox
	containers            []*runtimeapi.Container
}

func (l *listRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return l.sandboxes, nil
}

func (l *listRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return l.containers, nil
}

// BenchmarkPLEGSteadyRelistInProcess: the same 1,000 × 3 steady state,
// listed from memory. The first relist (status of every pod) goes to the
// simulator; then the runtime is swapped for the in-memory lists.
func BenchmarkPLEGSteadyRelistInProcess(b *testing.B) {
	_, rt := simRuntime(b)
	populate(b, rt, "pod", 1000, 3)
	ctx := context.Background()
	sbs, err := rt.ListPodSandbox(ctx, nil)
	require.NoError(b, err)
	cs, err := rt.ListContainers(ctx, nil)
	require.NoError(b, err)
	lists := &listRuntime{RuntimeService: rt, sandboxes: sbs, containers: cs}
	steadyRelists(b, lists)
}
