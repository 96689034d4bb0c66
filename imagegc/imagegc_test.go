package imagegc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/clockdrive"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeRuntime holds images and containers; containers name the image ID
// they were created from, and may mount images as volumes.
type fakeRuntime struct {
	mu         sync.Mutex
	images     []*runtimeapi.Image
	containers []*runtimeapi.Container
	volumes    map[string][]string // container ID → image IDs mounted
	removed    []string
	removeErr  error
	listErr    error
}

func image(i int, size uint64) *runtimeapi.Image {
	return &runtimeapi.Image{Id: fmt.Sprintf("image-%d", i), Size: size}
}

func (f *fakeRuntime) setContainers(images ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.containers = nil
	for n, i := range images {
		f.containers = append(f.containers, &runtimeapi.Container{Id: fmt.Sprintf("c%d", n), ImageRef: fmt.Sprintf("image-%d", i)})
	}
}

func (f *fakeRuntime) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	return append([]*runtimeapi.Image(nil), f.images...), nil
}

func (f *fakeRuntime) RemoveImage(_ context.Context, spec *runtimeapi.ImageSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.removeErr != nil {
		return f.removeErr
	}
	f.removed = append(f.removed, spec.Image)
	for i, img := range f.images {
		if img.Id == spec.Image {
			f.images = append(f.images[:i], f.images[i+1:]...)
			break
		}
	}
	return nil
}

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*runtimeapi.Container(nil), f.containers...), nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := &runtimeapi.ContainerStatus{Id: id}
	for _, img := range f.volumes[id] {
		st.Mounts = append(st.Mounts, &runtimeapi.Mount{Image: &runtimeapi.ImageSpec{Image: img}})
	}
	return &runtimeapi.ContainerStatusResponse{Status: st}, nil
}

func (f *fakeRuntime) removedImages() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.removed...)
}

type env struct {
	rt  *fakeRuntime
	m   *Manager
	clk *clocktesting.FakeClock
	fs  FsStats
	rec *record.FakeRecorder
	reg *prometheus.Registry
}

func newEnv(t *testing.T, adjust func(*Config)) *env {
	t.Helper()
	e := &env{rt: &fakeRuntime{}, clk: clocktesting.NewFakeClock(t0), rec: record.NewFakeRecorder(10), reg: prometheus.NewRegistry(),
		fs: FsStats{CapacityBytes: 1000, AvailableBytes: 1000}}
	cfg := Config{Images: e.rt, Containers: e.rt, ImageFs: func(context.Context) (FsStats, error) { return e.fs, nil },
		MinAge: -1, Clock: e.clk, Recorder: e.rec, NodeRef: &v1.ObjectReference{Kind: "Node", Name: "n"}, Registerer: e.reg}
	if adjust != nil {
		adjust(&cfg)
	}
	m, err := New(cfg)
	require.NoError(t, err)
	e.m = m
	return e
}

// detect runs a detection at the clock's now, then steps it by d.
func (e *env) detect(t *testing.T, d time.Duration) {
	t.Helper()
	_, err := e.m.detect(context.Background(), e.clk.Now())
	require.NoError(t, err)
	e.clk.Step(d)
}

func TestDetect(t *testing.T) {
	e := newEnv(t, nil)
	e.rt.images = []*runtimeapi.Image{image(0, 1024), image(1, 2048), image(2, 2048)}
	e.rt.setContainers(1)
	e.rt.volumes = map[string][]string{"c0": {"image-2"}}
	e.detect(t, time.Minute)
	require.Len(t, e.m.records, 3)
	assert.Equal(t, t0, e.m.records["image-0"].firstDetected)
	assert.True(t, e.m.records["image-0"].lastUsed.IsZero(), "never used")
	assert.Equal(t, t0, e.m.records["image-1"].lastUsed, "used by a container")
	assert.Equal(t, t0, e.m.records["image-2"].lastUsed, "used as an image volume")
	assert.Equal(t, uint64(2048), e.m.records["image-1"].size)

	// A new image is detected at the next pass; a removed one forgotten.
	e.rt.images = []*runtimeapi.Image{image(1, 2048), image(3, 10)}
	e.rt.setContainers()
	e.detect(t, 0)
	require.Len(t, e.m.records, 2)
	assert.Equal(t, t0, e.m.records["image-1"].firstDetected)
	assert.Equal(t, t0, e.m.records["image-1"].lastUsed, "last used at the pass before")
	assert.Equal(t, t0.Add(time.Minute), e.m.records["image-3"].firstDetected)
}

func TestPinnedAndInUseImagesStay(t *testing.T) {
	e := newEnv(t, nil)
	pinned := image(0, 1024)
	pinned.Pinned = true
	e.rt.images = []*runtimeapi.Image{pinned, image(1, 2048), image(2, 2048)}
	e.rt.setContainers(1)
	e.clk.Step(time.Minute)
	require.NoError(t, e.m.DeleteUnusedImages(context.Background()))
	assert.Equal(t, []string{"image-2"}, e.rt.removedImages(), "the sandbox image (pinned) and the one in use stay")
}

func TestDeleteUnusedImagesRespectsMinAge(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MinAge = time.Minute })
	e.rt.images = []*runtimeapi.Image{image(0, 1024), image(1, 2048)}
	e.detect(t, 30*time.Second)
	e.rt.images = append(e.rt.images, image(2, 2048))
	e.clk.Step(30 * time.Second)
	require.NoError(t, e.m.DeleteUnusedImages(context.Background()))
	got := e.rt.removedImages()
	sort.Strings(got)
	assert.Equal(t, []string{"image-0", "image-1"}, got, "image-2 was detected too recently")
}

func TestFreeSpaceLeastRecentlyUsedFirst(t *testing.T) {
	e := newEnv(t, nil)
	e.rt.images = []*runtimeapi.Image{image(0, 1024), image(1, 2048)}
	e.rt.setContainers(0, 1)
	e.detect(t, time.Second)
	e.rt.setContainers(1) // 1 is used more recently than 0
	e.detect(t, time.Second)
	e.rt.setContainers()
	now := e.clk.Now()
	images, err := e.m.detect(context.Background(), now)
	require.NoError(t, err)
	freed, err := e.m.freeSpace(context.Background(), 1024, now.Add(time.Minute), images)
	require.NoError(t, err)
	assert.Equal(t, uint64(1024), freed)
	assert.Equal(t, []string{"image-0"}, e.rt.removedImages())
}

func TestFreeSpaceTiesBrokenByDetectedTime(t *testing.T) {
	e := newEnv(t, nil)
	e.rt.images = []*runtimeapi.Image{image(0, 1024)}
	e.detect(t, time.Second)
	e.rt.images = []*runtimeapi.Image{image(0, 1024), image(1, 2048)}
	e.detect(t, time.Second)
	now := e.clk.Now()
	images, err := e.m.detect(context.Background(), now)
	require.NoError(t, err)
	freed, err := e.m.freeSpace(context.Background(), 1024, now, images)
	require.NoError(t, err)
	assert.Equal(t, uint64(1024), freed)
	assert.Equal(t, []string{"image-0"}, e.rt.removedImages(), "both never used: the first detected goes first")
}

func TestGarbageCollect(t *testing.T) {
	ctx := context.Background()
	t.Run("below the high threshold nothing goes", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.HighThresholdPercent, c.LowThresholdPercent = 90, 80 })
		e.rt.images = []*runtimeapi.Image{image(0, 450)}
		e.fs = FsStats{CapacityBytes: 1000, AvailableBytes: 600}
		require.NoError(t, e.m.GarbageCollect(ctx))
		assert.Empty(t, e.rt.removedImages())
	})
	t.Run("over it, down to the low one", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.HighThresholdPercent, c.LowThresholdPercent = 90, 80 })
		e.rt.images = []*runtimeapi.Image{image(0, 450)}
		e.fs = FsStats{CapacityBytes: 1000, AvailableBytes: 50}
		require.NoError(t, e.m.GarbageCollect(ctx))
		assert.Equal(t, []string{"image-0"}, e.rt.removedImages())
		assert.Equal(t, 1.0, testutil.ToFloat64(e.m.collected.WithLabelValues(ReasonSpace)))
	})
	t.Run("not enough freed", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.HighThresholdPercent, c.LowThresholdPercent = 90, 80 })
		capacity := uint64(10 << 30)
		e.fs = FsStats{CapacityBytes: capacity, AvailableBytes: capacity / 20}
		e.rt.images = []*runtimeapi.Image{image(0, 500<<20)}
		require.Error(t, e.m.GarbageCollect(ctx))
		assert.Equal(t, "Warning FreeDiskSpaceFailed Insufficient free disk space on the node's image filesystem"+
			" (95% of 10.0 GiB used). Failed to free sufficient space by deleting unused images (freed 524288000 bytes)."+
			" Investigate disk usage, as it could be used by active images, logs, volumes, or other data.", <-e.rec.Events)
	})
	t.Run("the image filesystem unreadable", func(t *testing.T) {
		e := newEnv(t, func(c *Config) {
			c.ImageFs = func(context.Context) (FsStats, error) { return FsStats{}, errors.New("no stats yet") }
		})
		require.ErrorContains(t, e.m.GarbageCollect(ctx), "no stats yet")
	})
	t.Run("zero capacity", func(t *testing.T) {
		e := newEnv(t, nil)
		e.fs = FsStats{}
		require.ErrorContains(t, e.m.GarbageCollect(ctx), "invalid capacity 0")
		assert.Equal(t, "Warning InvalidDiskCapacity invalid capacity 0 on image filesystem", <-e.rec.Events)
	})
	t.Run("an image not old enough stays", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.HighThresholdPercent, c.LowThresholdPercent, c.MinAge = 90, 80, time.Minute })
		e.fs = FsStats{CapacityBytes: 1000, AvailableBytes: 50}
		e.rt.images = []*runtimeapi.Image{image(0, 450)}
		require.Error(t, e.m.GarbageCollect(ctx), "detected now: not removable, so not enough freed")
		assert.Empty(t, e.rt.removedImages())
		e.clk.Step(time.Minute)
		require.NoError(t, e.m.GarbageCollect(ctx))
		assert.Equal(t, []string{"image-0"}, e.rt.removedImages())
	})
}

func TestGarbageCollectMaxAge(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, func(c *Config) { c.MaxAge = time.Hour })
	e.rt.images = []*runtimeapi.Image{image(0, 10), image(1, 10)}
	e.rt.setContainers(0, 1)
	require.NoError(t, e.m.GarbageCollect(ctx))
	e.rt.setContainers(1) // image-0 was last used at start
	e.clk.Step(time.Hour)
	require.NoError(t, e.m.GarbageCollect(ctx))
	assert.Empty(t, e.rt.removedImages(), "MaxAge counts from the collector's start too: not over it yet")
	e.clk.Step(time.Second)
	require.NoError(t, e.m.GarbageCollect(ctx))
	assert.Equal(t, []string{"image-0"}, e.rt.removedImages(), "unused for longer than MaxAge, whatever the usage")
	assert.Equal(t, 1.0, testutil.ToFloat64(e.m.collected.WithLabelValues(ReasonAge)))
	e.rt.setContainers()
	e.clk.Step(time.Hour)
	require.NoError(t, e.m.GarbageCollect(ctx))
	assert.Equal(t, []string{"image-0"}, e.rt.removedImages(), "image-1 was used an hour ago: not over MaxAge")

	off := newEnv(t, nil)
	off.rt.images = []*runtimeapi.Image{image(0, 10)}
	require.NoError(t, off.m.GarbageCollect(ctx))
	off.clk.Step(1000 * time.Hour)
	require.NoError(t, off.m.GarbageCollect(ctx))
	assert.Empty(t, off.rt.removedImages(), "MaxAge 0: no age limit")
}

func TestRemovalErrors(t *testing.T) {
	e := newEnv(t, nil)
	e.rt.images = []*runtimeapi.Image{image(0, 10)}
	e.rt.removeErr = errors.New("read-only file system")
	require.ErrorContains(t, e.m.DeleteUnusedImages(context.Background()), "read-only file system")
	require.Len(t, e.m.records, 1, "a record stays while its image does")
}

func TestNewValidates(t *testing.T) {
	rt := &fakeRuntime{}
	fs := func(context.Context) (FsStats, error) { return FsStats{}, nil }
	for name, cfg := range map[string]Config{
		"missing":     {},
		"high > 100":  {Images: rt, Containers: rt, ImageFs: fs, HighThresholdPercent: 101},
		"low < 0":     {Images: rt, Containers: rt, ImageFs: fs, LowThresholdPercent: -1},
		"low > high":  {Images: rt, Containers: rt, ImageFs: fs, HighThresholdPercent: 50, LowThresholdPercent: 60},
		"max age < 0": {Images: rt, Containers: rt, ImageFs: fs, MaxAge: -time.Second},
		"min > max":   {Images: rt, Containers: rt, ImageFs: fs, MinAge: time.Hour, MaxAge: time.Minute},
		"period < 0":  {Images: rt, Containers: rt, ImageFs: fs, Period: -time.Second},
	} {
		_, err := New(cfg)
		require.ErrorIs(t, err, ErrInvalidConfig, name)
	}
	m, err := New(Config{Images: rt, Containers: rt, ImageFs: fs})
	require.NoError(t, err)
	assert.Equal(t, DefaultHighThresholdPercent, m.cfg.HighThresholdPercent)
	assert.Equal(t, DefaultLowThresholdPercent, m.cfg.LowThresholdPercent)
	assert.Equal(t, DefaultMinAge, m.cfg.MinAge)
	assert.Equal(t, DefaultPeriod, m.cfg.Period)
	reg := prometheus.NewRegistry()
	_, err = New(Config{Images: rt, Containers: rt, ImageFs: fs, Registerer: reg})
	require.NoError(t, err)
	_, err = New(Config{Images: rt, Containers: rt, ImageFs: fs, Registerer: reg})
	require.ErrorIs(t, err, ErrInvalidConfig, "a registry that has the family already")
}

// TestRun: a pass at once and one per period, driven by clockdrive; a
// second failure in a row records ImageGCFailed.
func TestRun(t *testing.T) {
	e := newEnv(t, nil)
	e.rt.images = []*runtimeapi.Image{image(0, 10)}
	e.rt.listErr = errors.New("runtime down")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.m.Run(ctx) }()
	d, err := clockdrive.New(e.clk, map[string]clockdrive.Waker{"imagegc": e.m})
	require.NoError(t, err)
	safety, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	next, err := d.Parked(safety)
	require.NoError(t, err)
	require.Equal(t, t0.Add(DefaultPeriod), next)
	select {
	case ev := <-e.rec.Events:
		t.Fatalf("an event after one failure: %s", ev)
	default:
	}
	_, err = d.Step(safety)
	require.NoError(t, err)
	_, err = d.Parked(safety)
	require.NoError(t, err)
	assert.Equal(t, "Warning ImageGCFailed list images: runtime down", <-e.rec.Events)
	cancel()
	require.NoError(t, <-done)
}
