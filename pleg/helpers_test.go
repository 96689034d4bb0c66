package pleg

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/crisim"
)

const (
	pauseImage = "registry.k8s.io/pause:3.10"
	appImage   = "example.com/app:v1"
)

// epoch is where fake clocks start; CRI clients reject zero timestamps.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var _ RuntimeService = internalapi.RuntimeService(nil)

// env is a crisim runtime on a fake clock reached through cri-client.
type env struct {
	sim   *crisim.Sim
	clock *clocktesting.FakeClock
	rt    internalapi.RuntimeService
}

// newEnv starts the simulator and connects cri-client. When the test ends
// the client is closed, the server stopped, and goleak checks that nothing
// outlives them.
func newEnv(t *testing.T) *env {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	fc := clocktesting.NewFakeClock(epoch)
	sim, endpoint := crisim.Start(t, crisim.Config{Clock: fc, Images: []crisim.Image{{Ref: pauseImage}, {Ref: appImage}}})
	ctx := context.Background()
	rt, err := remote.NewRemoteRuntimeService(ctx, endpoint, 10*time.Second, nil, false)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(ctx)) })
	return &env{sim: sim, clock: fc, rt: rt}
}

// gen builds a Generator over the env's runtime (or over rt if given).
func (e *env) gen(t *testing.T, cfg Config) *Generator {
	t.Helper()
	if cfg.Runtime == nil {
		cfg.Runtime = e.rt
	}
	cfg.Clock = e.clock
	g, err := New(cfg)
	require.NoError(t, err)
	return g
}

func uidOf(name string) types.UID { return types.UID("uid-" + name) }

func podConfig(name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: string(uidOf(name))},
		Labels:   map[string]string{PodUIDLabel: string(uidOf(name))},
	}
}

// runPod creates a ready sandbox for pod name.
func (e *env) runPod(t testing.TB, name string) string {
	t.Helper()
	id, err := e.rt.RunPodSandbox(context.Background(), podConfig(name), "")
	require.NoError(t, err)
	return id
}

// createContainer creates container cname in the sandbox of pod name.
func (e *env) createContainer(t testing.TB, sandboxID, name, cname string) string {
	t.Helper()
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: cname},
		Image:    &runtimeapi.ImageSpec{Image: appImage},
		Labels:   map[string]string{PodUIDLabel: string(uidOf(name))},
	}
	id, err := e.rt.CreateContainer(context.Background(), sandboxID, cfg, podConfig(name))
	require.NoError(t, err)
	return id
}

// startContainer creates and starts container cname.
func (e *env) startContainer(t testing.TB, sandboxID, name, cname string) string {
	t.Helper()
	id := e.createContainer(t, sandboxID, name, cname)
	require.NoError(t, e.rt.StartContainer(context.Background(), id))
	return id
}

// drain returns the events waiting on the channel, without blocking.
func drain(g *Generator) []PodLifecycleEvent {
	var out []PodLifecycleEvent
	for {
		select {
		case ev := <-g.Events():
			out = append(out, ev)
		default:
			return out
		}
	}
}

// sortEvents orders events by pod, type and data for comparisons where the
// order across pods does not matter.
func sortEvents(evs []PodLifecycleEvent) []PodLifecycleEvent {
	slices.SortStableFunc(evs, func(a, b PodLifecycleEvent) int {
		switch {
		case a.ID != b.ID:
			return cmpStr(string(a.ID), string(b.ID))
		case a.Type != b.Type:
			return cmpStr(string(a.Type), string(b.Type))
		}
		return cmpStr(a.ContainerID.ID, b.ContainerID.ID)
	})
	return evs
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func ev(uid types.UID, typ EventType, id string) PodLifecycleEvent {
	if typ == PodSync {
		return PodLifecycleEvent{ID: uid, Type: typ}
	}
	return PodLifecycleEvent{ID: uid, Type: typ, ContainerID: containerid.ID{ID: id}}
}

// relist runs one Relist and returns its result.
func relist(t *testing.T, g *Generator) RelistResult {
	t.Helper()
	res, err := g.Relist(context.Background())
	require.NoError(t, err)
	return res
}

// next waits for the next event on the channel.
func next(t *testing.T, g *Generator) PodLifecycleEvent {
	t.Helper()
	select {
	case ev := <-g.Events():
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	return PodLifecycleEvent{}
}

// hookRuntime wraps a RuntimeService to run hooks around calls, for faults
// crisim cannot express (a container vanishing between list and status, a
// stream that breaks).
type hookRuntime struct {
	RuntimeService
	afterListContainers func()

	mu          sync.Mutex
	breakStream context.CancelFunc
}

func (h *hookRuntime) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	cs, err := h.RuntimeService.ListContainers(ctx, f)
	if h.afterListContainers != nil {
		h.afterListContainers()
	}
	return cs, err
}

func (h *hookRuntime) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, cb func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h.mu.Lock()
	h.breakStream = cancel
	h.mu.Unlock()
	return h.RuntimeService.GetContainerEvents(ctx, ch, cb)
}

// cut breaks the current event stream.
func (h *hookRuntime) cut() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.breakStream != nil {
		h.breakStream()
	}
}

// metricValue returns the value of a counter or gauge, or the sample count
// of a histogram, summed over its series.
func metricValue(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		var sum float64
		for _, m := range f.GetMetric() {
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
		return sum
	}
	return 0
}
