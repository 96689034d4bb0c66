package cgroups

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// tickingClock is a PassiveClock whose time moves on by step at every
// reading, so that an operation timed by two readings takes exactly step.
type tickingClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

var _ clock.PassiveClock = (*tickingClock)(nil)

func (c *tickingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now
	c.now = c.now.Add(c.step)
	return t
}

func (c *tickingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

const durationHeader = `# HELP kubelet_cgroup_manager_duration_seconds [ALPHA] Duration in seconds for cgroup manager operations. Broken down by method.
# TYPE kubelet_cgroup_manager_duration_seconds histogram
`

// durationSeries is the histogram of n operations of type op that took
// 250ms each.
func durationSeries(op string, n int, sum string) string {
	var b strings.Builder
	for _, le := range []string{"0.005", "0.01", "0.025", "0.05", "0.1"} {
		b.WriteString(`kubelet_cgroup_manager_duration_seconds_bucket{operation_type="` + op + `",le="` + le + `"} 0` + "\n")
	}
	for _, le := range []string{"0.25", "0.5", "1", "2.5", "5", "10", "+Inf"} {
		b.WriteString(`kubelet_cgroup_manager_duration_seconds_bucket{operation_type="` + op + `",le="` + le + `"} ` + strconv.Itoa(n) + "\n")
	}
	b.WriteString(`kubelet_cgroup_manager_duration_seconds_sum{operation_type="` + op + `"} ` + sum + "\n")
	b.WriteString(`kubelet_cgroup_manager_duration_seconds_count{operation_type="` + op + `"} ` + strconv.Itoa(n) + "\n")
	return b.String()
}

func TestMetrics(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	clk := &tickingClock{now: time.Unix(1000, 0), step: 250 * time.Millisecond}
	m, err := New(Config{Mount: v1Tree(t), Clock: clk, Registerer: reg})
	require.NoError(t, err)

	require.NoError(t, m.Setup(ctx)) // creates kubepods, burstable, besteffort
	g := podWith("g1", guar("a", "500m", "128Mi"))
	b := podWith("b1", ctr("a", rl("cpu", "250m"), nil))
	require.NoError(t, m.EnsurePod(ctx, g))
	require.NoError(t, m.EnsurePod(ctx, g), "exists: no operation")
	require.NoError(t, m.UpdatePod(ctx, g, Resources{CPUShares: 1024}))
	require.NoError(t, m.UpdateQoS(ctx, []*v1.Pod{g, b}))
	require.NoError(t, m.UpdateQoS(ctx, []*v1.Pod{g, b}), "unchanged: nothing written")
	require.NoError(t, m.Destroy(ctx, m.PodCgroup(g)))

	want := durationHeader +
		durationSeries(opCreate, 4, "1") +
		durationSeries(opDestroy, 1, "0.25") +
		durationSeries(opUpdate, 2, "0.5") + `# HELP kubelet_cgroup_version [ALPHA] cgroup version on the hosts.
# TYPE kubelet_cgroup_version gauge
kubelet_cgroup_version 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want)))

	// Setup on an existing tree writes the tiers again: three updates.
	require.NoError(t, m.Setup(ctx))
	want = durationHeader + durationSeries(opCreate, 4, "1") + durationSeries(opDestroy, 1, "0.25") + durationSeries(opUpdate, 5, "1.25")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "kubelet_cgroup_manager_duration_seconds"))

	// A second Manager on the same registry is refused, not a panic, and
	// leaves nothing of its own registered.
	_, err = New(Config{Mount: v1Tree(t), Registerer: reg})
	require.ErrorContains(t, err, "cgroups: register metrics")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "kubelet_cgroup_manager_duration_seconds"))
}

func TestMetricsCgroupVersion2(t *testing.T) {
	mnt := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644))
	reg := prometheus.NewRegistry()
	_, err := New(Config{Mount: mnt, Registerer: reg})
	require.NoError(t, err)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`# HELP kubelet_cgroup_version [ALPHA] cgroup version on the hosts.
# TYPE kubelet_cgroup_version gauge
kubelet_cgroup_version 2
`), "kubelet_cgroup_version"))
}

func TestMetricsPartialRegistration(t *testing.T) {
	// Only the gauge is taken: the histogram registered before it is
	// taken back, so a later Manager can register both.
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubelet_cgroup_version", Help: "[ALPHA] cgroup version on the hosts."}))
	_, err := New(Config{Mount: v1Tree(t), Registerer: reg})
	require.ErrorContains(t, err, "cgroups: register metrics")
	require.True(t, reg.Unregister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubelet_cgroup_version", Help: "[ALPHA] cgroup version on the hosts."})))
	_, err = New(Config{Mount: v1Tree(t), Registerer: reg})
	require.NoError(t, err)
}
