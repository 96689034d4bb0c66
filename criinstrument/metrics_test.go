package criinstrument

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// slowRuntime is the cri-api fake runtime whose sandbox calls take time on
// a fake clock.
type slowRuntime struct {
	*critesting.FakeRuntimeService
	clk  *clocktesting.FakeClock
	took time.Duration
}

func (r *slowRuntime) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.clk.Step(r.took)
	return r.FakeRuntimeService.ListPodSandbox(ctx, f)
}

func (r *slowRuntime) RunPodSandbox(ctx context.Context, c *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	r.clk.Step(r.took)
	return r.FakeRuntimeService.RunPodSandbox(ctx, c, handler)
}

func newTest(t *testing.T) (*prometheus.Registry, *clocktesting.FakeClock, *slowRuntime, *critesting.FakeImageService, *RuntimeService, *ImageService) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	fake := &slowRuntime{FakeRuntimeService: critesting.NewFakeRuntimeService(), clk: clk, took: 30 * time.Millisecond}
	images := critesting.NewFakeImageService()
	m, err := New(Config{Registerer: reg, Clock: clk})
	require.NoError(t, err)
	return reg, clk, fake, images, m.Runtime(fake), m.Images(images)
}

func TestRecordsOperations(t *testing.T) {
	reg, _, fake, images, rt, img := newTest(t)
	ctx := context.Background()

	_, err := rt.ListPodSandbox(ctx, nil)
	require.NoError(t, err)
	_, err = rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Uid: "u"}}, "runc")
	require.NoError(t, err)
	fake.InjectError("RunPodSandbox", errors.New("no sandbox"))
	_, err = rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "q", Uid: "v"}}, "runc")
	require.Error(t, err, "the runtime's error is returned as it is")
	_, err = img.PullImage(ctx, &runtimeapi.ImageSpec{Image: "busybox"}, nil, nil)
	require.NoError(t, err)
	images.InjectError("ImageFsInfo", errors.New("no fs"))
	_, err = img.ImageFsInfo(ctx)
	require.Error(t, err, "unlike upstream's wrapper, the error is not swallowed")

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubelet_runtime_operations_total [ALPHA] Cumulative number of runtime operations by operation type.
# TYPE kubelet_runtime_operations_total counter
kubelet_runtime_operations_total{operation_type="image_fs_info"} 1
kubelet_runtime_operations_total{operation_type="list_podsandbox"} 1
kubelet_runtime_operations_total{operation_type="pull_image"} 1
kubelet_runtime_operations_total{operation_type="run_podsandbox"} 2
# HELP kubelet_runtime_operations_errors_total [ALPHA] Cumulative number of runtime operation errors by operation type.
# TYPE kubelet_runtime_operations_errors_total counter
kubelet_runtime_operations_errors_total{operation_type="image_fs_info"} 1
kubelet_runtime_operations_errors_total{operation_type="run_podsandbox"} 1
# HELP kubelet_run_podsandbox_errors_total [ALPHA] Cumulative number of the run_podsandbox operation errors by RuntimeClass.Handler.
# TYPE kubelet_run_podsandbox_errors_total counter
kubelet_run_podsandbox_errors_total{runtime_handler="runc"} 1
`), "kubelet_runtime_operations_total", "kubelet_runtime_operations_errors_total", "kubelet_run_podsandbox_errors_total"))

	// Durations come from the injected clock: each sandbox call took 30ms.
	families, err := reg.Gather()
	require.NoError(t, err)
	sums := map[string]float64{}
	counts := map[string]uint64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if h := m.GetHistogram(); h != nil {
				key := f.GetName() + "/" + m.GetLabel()[0].GetValue()
				sums[key], counts[key] = h.GetSampleSum(), h.GetSampleCount()
			}
		}
	}
	require.InDelta(t, 0.03, sums["kubelet_runtime_operations_duration_seconds/list_podsandbox"], 1e-9)
	require.InDelta(t, 0.06, sums["kubelet_runtime_operations_duration_seconds/run_podsandbox"], 1e-9)
	require.Equal(t, uint64(1), counts["kubelet_runtime_operations_duration_seconds/pull_image"])
	require.InDelta(t, 0.06, sums["kubelet_run_podsandbox_duration_seconds/runc"], 1e-9)
	require.Equal(t, uint64(2), counts["kubelet_run_podsandbox_duration_seconds/runc"])
}

func TestBuckets(t *testing.T) {
	reg, _, _, _, rt, _ := newTest(t)
	_, err := rt.Version(context.Background(), "v1")
	require.NoError(t, err)
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "kubelet_runtime_operations_duration_seconds" {
			continue
		}
		b := f.GetMetric()[0].GetHistogram().GetBucket()
		require.Len(t, b, 14, "upstream's ExponentialBuckets(.005, 2.5, 14)")
		require.InDelta(t, 0.005, b[0].GetUpperBound(), 1e-12)
		require.InDelta(t, 0.0125, b[1].GetUpperBound(), 1e-12)
		return
	}
	t.Fatal("no duration family")
}

func TestNilRegistererPassesThrough(t *testing.T) {
	m, err := New(Config{})
	require.NoError(t, err)
	fake := critesting.NewFakeRuntimeService()
	rt := m.Runtime(fake)
	v, err := rt.Version(context.Background(), "v1")
	require.NoError(t, err)
	require.Equal(t, "fakeRuntime", v.RuntimeName)
	require.Same(t, fake, rt.Unwrap())
	_, err = m.Images(critesting.NewFakeImageService()).ListImages(context.Background(), nil)
	require.NoError(t, err)
}

func TestDuplicateRegistrationIsAnError(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, err := New(Config{Registerer: reg})
	require.NoError(t, err)
	_, err = New(Config{Registerer: reg})
	require.ErrorIs(t, err, ErrInvalidConfig)
	var are prometheus.AlreadyRegisteredError
	require.ErrorAs(t, err, &are)
}
