package containergc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/clockdrive"
)

func ctr(id, sandbox, pod, name string, created int64, state runtimeapi.ContainerState) *runtimeapi.Container {
	return &runtimeapi.Container{Id: id, PodSandboxId: sandbox, CreatedAt: created, State: state,
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Labels:   map[string]string{labelPodUID: pod, labelContainerName: name}}
}

func sandbox(id, pod string, created int64, ready bool) *runtimeapi.PodSandbox {
	st := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		st = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return &runtimeapi.PodSandbox{Id: id, CreatedAt: created, State: st, Metadata: &runtimeapi.PodSandboxMetadata{Uid: pod}}
}

const (
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	created = runtimeapi.ContainerState_CONTAINER_CREATED
)

func TestSelect(t *testing.T) {
	live := func(u types.UID) bool { return u == "live" }
	for _, tc := range []struct {
		name       string
		policy     Policy
		containers []*runtimeapi.Container
		sandboxes  []*runtimeapi.PodSandbox
		want       Selection
	}{
		{
			name: "a crash-looping container keeps its newest dead instance",
			containers: []*runtimeapi.Container{
				ctr("c1", "s1", "live", "app", 1, exited), ctr("c2", "s1", "live", "app", 2, exited),
				ctr("c3", "s1", "live", "app", 3, exited), ctr("c4", "s1", "live", "app", 4, running),
				ctr("d1", "s1", "live", "side", 1, exited),
			},
			sandboxes: []*runtimeapi.PodSandbox{sandbox("s1", "live", 1, true)},
			want:      Selection{Containers: []string{"c1", "c2"}},
		},
		{
			name:       "keep more by policy",
			policy:     Policy{MaxPerPodContainer: 2},
			containers: []*runtimeapi.Container{ctr("c1", "s1", "live", "app", 1, exited), ctr("c2", "s1", "live", "app", 2, exited), ctr("c3", "s1", "live", "app", 3, exited)},
			want:       Selection{Containers: []string{"c1"}},
		},
		{
			name:       "keep none by policy; created-but-never-started counts as dead",
			policy:     Policy{MaxPerPodContainer: -1},
			containers: []*runtimeapi.Container{ctr("c1", "s1", "live", "app", 1, exited), ctr("c2", "s1", "live", "app", 2, created)},
			want:       Selection{Containers: []string{"c1", "c2"}},
		},
		{
			name: "old sandboxes of a live pod go once empty; the newest stays even not ready",
			containers: []*runtimeapi.Container{
				ctr("c1", "s1", "live", "app", 1, exited), // older dead instance in the old sandbox: removed
				ctr("c2", "s2", "live", "app", 2, exited), // newest dead: kept, holds s2
			},
			sandboxes: []*runtimeapi.PodSandbox{sandbox("s1", "live", 1, false), sandbox("s2", "live", 2, false), sandbox("s3", "live", 3, false)},
			want:      Selection{Containers: []string{"c1"}, Sandboxes: []string{"s1"}},
		},
		{
			name:       "a gone pod loses every dead thing, never what runs",
			containers: []*runtimeapi.Container{ctr("c1", "s1", "gone", "app", 1, exited), ctr("c2", "s2", "gone", "app", 2, running)},
			sandboxes:  []*runtimeapi.PodSandbox{sandbox("s1", "gone", 1, false), sandbox("s2", "gone", 2, true), sandbox("s3", "gone", 3, false)},
			want:       Selection{Containers: []string{"c1"}, Sandboxes: []string{"s1", "s3"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Select(tc.policy, tc.containers, tc.sandboxes, live))
		})
	}
}

type fakeRuntime struct {
	containers []*runtimeapi.Container
	sandboxes  []*runtimeapi.PodSandbox
	removed    []string
	fail       string
}

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return f.containers, nil
}
func (f *fakeRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return f.sandboxes, nil
}
func (f *fakeRuntime) RemoveContainer(_ context.Context, id string) error {
	if id == f.fail {
		return errors.New("busy")
	}
	f.removed = append(f.removed, id)
	return nil
}
func (f *fakeRuntime) RemovePodSandbox(_ context.Context, id string) error {
	f.removed = append(f.removed, id)
	return nil
}

func TestCollect(t *testing.T) {
	rt := &fakeRuntime{
		containers: []*runtimeapi.Container{ctr("c1", "s1", "gone", "a", 1, exited), ctr("c2", "s1", "gone", "b", 1, exited)},
		sandboxes:  []*runtimeapi.PodSandbox{sandbox("s1", "gone", 1, false)},
		fail:       "c1",
	}
	sel, err := Collect(context.Background(), rt, Policy{}, func(types.UID) bool { return false })
	require.Error(t, err, "a failed removal is reported")
	assert.Contains(t, err.Error(), "c1")
	assert.Equal(t, []string{"c1", "c2"}, sel.Containers)
	assert.Equal(t, []string{"c2", "s1"}, rt.removed, "the rest still goes")
}

func TestCollectorKeepsEverythingUntilSourcesAreReady(t *testing.T) {
	rt := &fakeRuntime{containers: []*runtimeapi.Container{ctr("c1", "s1", "unknown", "a", 1, exited)},
		sandboxes: []*runtimeapi.PodSandbox{sandbox("s1", "unknown", 1, false)}}
	ready := false
	c, err := NewCollector(CollectorConfig{Runtime: rt, PodExists: func(types.UID) bool { return false },
		SourcesReady: func() bool { return ready }})
	require.NoError(t, err)
	require.NoError(t, c.Collect(context.Background()))
	assert.Empty(t, rt.removed, "a pod whose config has not arrived yet keeps its newest instance")
	ready = true
	require.NoError(t, c.Collect(context.Background()))
	assert.Equal(t, []string{"c1", "s1"}, rt.removed)
}

func TestNewCollectorValidates(t *testing.T) {
	_, err := NewCollector(CollectorConfig{})
	require.Error(t, err)
	_, err = NewCollector(CollectorConfig{Runtime: &fakeRuntime{}, PodExists: func(types.UID) bool { return true }, Period: -time.Second})
	require.ErrorContains(t, err, "negative")
}

func TestCollectorRunsEveryPeriod(t *testing.T) {
	rt := &countingRuntime{}
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	c, err := NewCollector(CollectorConfig{Runtime: rt, PodExists: func(types.UID) bool { return true }, Clock: clk})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	require.Eventually(t, func() bool { return rt.lists.Load() == 1 && clk.HasWaiters() }, 5*time.Second, time.Millisecond, "a pass at once")
	clk.Step(DefaultPeriod - time.Second)
	assert.Equal(t, int64(1), rt.lists.Load())
	clk.Step(time.Second)
	require.Eventually(t, func() bool { return rt.lists.Load() == 2 }, 5*time.Second, time.Millisecond, "and one per period")
	cancel()
	require.NoError(t, <-done)
}

// countingRuntime counts passes (its ListContainers calls); it holds
// nothing.
type countingRuntime struct {
	fakeRuntime
	lists atomic.Int64
}

func (c *countingRuntime) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	c.lists.Add(1)
	return nil, nil
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCollectorNextWake: Run tells clockdrive when its next pass is due,
// and a driven fake clock runs one pass per period.
func TestCollectorNextWake(t *testing.T) {
	rt := &countingRuntime{}
	t0 := time.Unix(0, 0)
	clk := clocktesting.NewFakeClock(t0)
	c, err := NewCollector(CollectorConfig{Runtime: rt, PodExists: func(types.UID) bool { return true }, Clock: clk})
	require.NoError(t, err)
	_, ok := c.NextWake()
	require.False(t, ok, "not running")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	d, err := clockdrive.New(clk, map[string]clockdrive.Waker{"containergc": c})
	require.NoError(t, err)
	safety, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	next, err := d.Parked(safety)
	require.NoError(t, err)
	require.Equal(t, t0.Add(DefaultPeriod), next)
	steps, err := d.StepUntil(safety, t0.Add(3*DefaultPeriod))
	require.NoError(t, err)
	require.Equal(t, []time.Duration{DefaultPeriod, DefaultPeriod, DefaultPeriod}, steps)
	_, err = d.Parked(safety)
	require.NoError(t, err)
	require.Equal(t, int64(4), rt.lists.Load(), "one pass at start, one per period")
	cancel()
	require.NoError(t, <-done)
	_, ok = c.NextWake()
	require.False(t, ok, "stopped")
}

// TestPodLogDirectories: once the sources are ready, the log directory of
// a pod neither the agent nor the runtime knows any more is removed; a
// known pod's, and one whose sandbox or container remains, stay.
func TestPodLogDirectories(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"ns_known_uid-known", "ns_gone_uid-gone", "ns_sandbox_uid-sb", "ns_ctr_uid-ctr"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d, "app"), 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(dir, d, "app", "0.log"), []byte("x"), 0o640))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stray-file"), nil, 0o640))
	rt := &fakeRuntime{
		sandboxes:  []*runtimeapi.PodSandbox{{Id: "s1", Metadata: &runtimeapi.PodSandboxMetadata{Uid: "uid-sb"}, State: runtimeapi.PodSandboxState_SANDBOX_READY}},
		containers: []*runtimeapi.Container{{Id: "c1", Labels: map[string]string{labelPodUID: "uid-ctr"}, State: runtimeapi.ContainerState_CONTAINER_RUNNING}},
	}
	ready := false
	c, err := NewCollector(CollectorConfig{Runtime: rt, PodExists: func(uid types.UID) bool { return uid == "uid-known" },
		SourcesReady: func() bool { return ready }, PodLogsDir: dir})
	require.NoError(t, err)
	require.NoError(t, c.Collect(context.Background()))
	require.DirExists(t, filepath.Join(dir, "ns_gone_uid-gone"), "not before every source is read")
	ready = true
	require.NoError(t, c.Collect(context.Background()))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"ns_ctr_uid-ctr", "ns_known_uid-known", "ns_sandbox_uid-sb", "stray-file"}, names)
}

// TestCollectorRemovesContainerLogsFirst: a container's logs go before the
// container; when they cannot, the container stays (upstream's
// removeContainer).
func TestCollectorRemovesContainerLogsFirst(t *testing.T) {
	rt := &fakeRuntime{containers: []*runtimeapi.Container{ctr("c1", "s1", "gone", "a", 1, exited), ctr("c2", "s1", "gone", "b", 1, exited)},
		sandboxes: []*runtimeapi.PodSandbox{sandbox("s1", "gone", 1, false)}}
	var cleaned []string
	c, err := NewCollector(CollectorConfig{Runtime: rt, PodExists: func(types.UID) bool { return false },
		RemoveContainerLogs: func(_ context.Context, id string) error {
			if id == "c2" {
				return errors.New("log file busy")
			}
			cleaned = append(cleaned, id)
			return nil
		}})
	require.NoError(t, err)
	err = c.Collect(context.Background())
	require.ErrorContains(t, err, "remove the logs of container c2: log file busy")
	assert.Equal(t, []string{"c1"}, cleaned)
	assert.Equal(t, []string{"c1", "s1"}, rt.removed, "c2 stays with its logs")
}
