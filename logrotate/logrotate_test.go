package logrotate

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/clockdrive"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeRuntime runs containers whose logs are files in a directory; a
// reopen creates the live file afresh, as a runtime does.
type fakeRuntime struct {
	mu        sync.Mutex
	logs      map[string]string // container ID → log path
	stopped   map[string]bool
	reopened  []string
	reopenErr error
}

func (f *fakeRuntime) ListContainers(_ context.Context, _ *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.Container
	for id := range f.logs {
		st := runtimeapi.ContainerState_CONTAINER_RUNNING
		if f.stopped[id] {
			st = runtimeapi.ContainerState_CONTAINER_EXITED
		}
		out = append(out, &runtimeapi.Container{Id: id, State: st})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Id < out[j].Id })
	return out, nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.logs[id]
	if !ok {
		return nil, errors.New("not found")
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id, LogPath: p}}, nil
}

func (f *fakeRuntime) ReopenContainerLog(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reopenErr != nil {
		return f.reopenErr
	}
	f.reopened = append(f.reopened, id)
	return os.WriteFile(f.logs[id], nil, 0o640)
}

func newManager(t *testing.T, rt *fakeRuntime, clk *clocktesting.FakeClock, adjust func(*Config)) *Manager {
	t.Helper()
	cfg := Config{Runtime: rt, MaxSize: 10, MaxFiles: 4, Clock: clk}
	if adjust != nil {
		adjust(&cfg)
	}
	m, err := New(cfg)
	require.NoError(t, err)
	return m
}

func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r, err := gzip.NewReader(f)
	require.NoError(t, err)
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	return string(b)
}

func TestRotate(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	rt := &fakeRuntime{logs: map[string]string{"c1": log}}
	clk := clocktesting.NewFakeClock(t0)
	m := newManager(t, rt, clk, nil)
	ctx := context.Background()

	require.NoError(t, os.WriteFile(log, []byte("short\n"), 0o640))
	require.NoError(t, m.RotateLogs(ctx))
	assert.Equal(t, []string{"0.log"}, files(t, dir), "under MaxSize: left alone")

	require.NoError(t, os.WriteFile(log, []byte("first line\n"), 0o640))
	require.NoError(t, m.RotateLogs(ctx))
	assert.Equal(t, []string{"0.log", "0.log.20260102-030405"}, files(t, dir))
	assert.Equal(t, []string{"c1"}, rt.reopened)

	// Each rotation compresses the earlier ones and keeps MaxFiles−2
	// rotated files beside the live one and the newest.
	for i, line := range []string{"second line\n", "third line!\n", "fourth line\n"} {
		clk.Step(time.Minute)
		require.NoError(t, os.WriteFile(log, []byte(line), 0o640), i)
		require.NoError(t, m.RotateLogs(ctx))
	}
	assert.Equal(t, []string{"0.log", "0.log.20260102-030505.gz", "0.log.20260102-030605.gz", "0.log.20260102-030705"}, files(t, dir),
		"the first rotated file went: MaxFiles 4 is the live file, the newest and two compressed")
	assert.Equal(t, "third line!\n", gunzip(t, filepath.Join(dir, "0.log.20260102-030605.gz")))
	b, _ := os.ReadFile(filepath.Join(dir, "0.log.20260102-030705"))
	assert.Equal(t, "fourth line\n", string(b), "the newest rotated file stays plain for a reader")
}

func TestLeftoversOfAnInterruptedRotation(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	rt := &fakeRuntime{logs: map[string]string{"c1": log}}
	m := newManager(t, rt, clocktesting.NewFakeClock(t0), func(c *Config) { c.MaxFiles = 10 })
	for name, content := range map[string]string{
		"0.log":                     "0123456789",
		"0.log.20260101-000000":     "plain copy", // its .gz exists: a compression that did not finish removing it
		"0.log.20260101-000000.gz":  "",
		"0.log.20260101-010000.tmp": "half written",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o640))
	}
	require.NoError(t, m.RotateLogs(context.Background()))
	assert.Equal(t, []string{"0.log", "0.log.20260101-000000.gz", "0.log.20260102-030405"}, files(t, dir))
}

func TestReopenFailureLosesNothing(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	rt := &fakeRuntime{logs: map[string]string{"c1": log}, reopenErr: errors.New("runtime busy")}
	m := newManager(t, rt, clocktesting.NewFakeClock(t0), nil)
	require.NoError(t, os.WriteFile(log, []byte("0123456789abc"), 0o640))
	require.NoError(t, m.RotateLogs(context.Background()), "a container's failure is logged, not the pass's")
	assert.Equal(t, []string{"0.log"}, files(t, dir), "renamed back")
	b, _ := os.ReadFile(log)
	assert.Equal(t, "0123456789abc", string(b))
}

func TestMissingLogIsReopened(t *testing.T) {
	dir := t.TempDir()
	rt := &fakeRuntime{logs: map[string]string{"c1": filepath.Join(dir, "0.log")}}
	m := newManager(t, rt, clocktesting.NewFakeClock(t0), nil)
	require.NoError(t, m.RotateLogs(context.Background()))
	assert.Equal(t, []string{"c1"}, rt.reopened)
	assert.Equal(t, []string{"0.log"}, files(t, dir))
}

func TestOnlyRunningContainersAndDisabled(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	require.NoError(t, os.WriteFile(log, []byte(strings.Repeat("x", 100)), 0o640))
	rt := &fakeRuntime{logs: map[string]string{"c1": log}, stopped: map[string]bool{"c1": true}}
	m := newManager(t, rt, clocktesting.NewFakeClock(t0), nil)
	require.NoError(t, m.RotateLogs(context.Background()))
	assert.Equal(t, []string{"0.log"}, files(t, dir), "an exited container writes no more")

	off := newManager(t, &fakeRuntime{logs: map[string]string{"c1": log}}, clocktesting.NewFakeClock(t0), func(c *Config) { c.MaxSize = -1 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, off.Run(ctx), "MaxSize < 0: Run only waits")
	assert.Equal(t, []string{"0.log"}, files(t, dir))
}

func TestClean(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	for _, name := range []string{"0.log", "0.log.20260101-000000.gz", "0.log.20260101-000100", "1.log"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o640))
	}
	m := newManager(t, &fakeRuntime{logs: map[string]string{"c1": log}}, clocktesting.NewFakeClock(t0), nil)
	require.NoError(t, m.Clean(context.Background(), "c1"))
	assert.Equal(t, []string{"1.log"}, files(t, dir), "another container's log stays")
	require.Error(t, m.Clean(context.Background(), "gone"))
}

func TestRunEveryInterval(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	require.NoError(t, os.WriteFile(log, []byte("0123456789"), 0o640))
	rt := &fakeRuntime{logs: map[string]string{"c1": log}}
	clk := clocktesting.NewFakeClock(t0)
	m := newManager(t, rt, clk, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	d, err := clockdrive.New(clk, map[string]clockdrive.Waker{"logrotate": m})
	require.NoError(t, err)
	safety, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	next, err := d.Parked(safety)
	require.NoError(t, err)
	require.Equal(t, t0.Add(DefaultMonitorInterval), next)
	assert.Len(t, files(t, dir), 2, "a pass at once")
	require.NoError(t, os.WriteFile(log, []byte("0123456789"), 0o640))
	_, err = d.Step(safety)
	require.NoError(t, err)
	_, err = d.Parked(safety)
	require.NoError(t, err)
	assert.Len(t, files(t, dir), 3, "and one per interval")
	cancel()
	require.NoError(t, <-done)
}

func TestNewValidates(t *testing.T) {
	rt := &fakeRuntime{}
	for name, cfg := range map[string]Config{
		"no runtime":  {},
		"one file":    {Runtime: rt, MaxFiles: 1},
		"workers < 0": {Runtime: rt, MaxWorkers: -1},
		"interval<0":  {Runtime: rt, MonitorInterval: -time.Second},
	} {
		_, err := New(cfg)
		require.ErrorIs(t, err, ErrInvalidConfig, name)
	}
	m, err := New(Config{Runtime: rt})
	require.NoError(t, err)
	assert.Equal(t, int64(DefaultMaxSize), m.cfg.MaxSize)
	assert.Equal(t, DefaultMaxFiles, m.cfg.MaxFiles)
	assert.Equal(t, DefaultMaxWorkers, m.cfg.MaxWorkers)
	assert.Equal(t, DefaultMonitorInterval, m.cfg.MonitorInterval)
}
