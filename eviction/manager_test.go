package eviction

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubetypes"
)

type env struct {
	m     *Manager
	host  *fakeHost
	clock *clocktesting.FakeClock
	node  node
}

func newEnv(t *testing.T, cfg Config, pods ...*v1.Pod) *env {
	t.Helper()
	e := &env{host: &fakeHost{pods: pods}, clock: clocktesting.NewFakeClock(epoch), node: healthyNode()}
	e.node.time = epoch
	e.host.set(e.node.summary())
	cfg.Summary, cfg.ActivePods, cfg.KillPod, cfg.Clock = e.host, e.host.activePods, e.host.kill, e.clock
	m, err := New(cfg)
	require.NoError(t, err)
	e.m = m
	return e
}

// observe publishes a new summary sampled now.
func (e *env) observe(mut func(*node), pods ...statsapi.PodStats) {
	n := e.node
	if mut != nil {
		mut(&n)
	}
	n.time = e.clock.Now()
	e.host.set(n.summary(pods...))
}

func (e *env) step(d time.Duration) { e.clock.Step(d) }

func TestNewValidation(t *testing.T) {
	h := &fakeHost{}
	ok := Config{Summary: h, ActivePods: h.activePods, KillPod: h.kill}
	tests := []struct {
		name string
		mut  func(*Config)
		want string
	}{
		{"no summary", func(c *Config) { c.Summary = nil }, "Summary is required"},
		{"no pods", func(c *Config) { c.ActivePods = nil }, "ActivePods is required"},
		{"no kill", func(c *Config) { c.KillPod = nil }, "KillPod is required"},
		{"split without imagefs", func(c *Config) { c.SplitContainerFs = true }, "SplitContainerFs requires DedicatedImageFs"},
		{"negative grace", func(c *Config) { c.MaxPodGracePeriodSeconds = -1 }, "negative"},
		{"negative interval", func(c *Config) { c.MonitoringInterval = -time.Second }, "MonitoringInterval"},
		{"bad threshold", func(c *Config) { c.Thresholds = []Threshold{{Signal: "nope"}} }, `unknown signal "nope"`},
		{"nil notifier", func(c *Config) { c.Notifiers = []Notifier{nil} }, "Notifiers[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mut(&c)
			_, err := New(c)
			require.ErrorIs(t, err, ErrInvalidConfig)
			require.ErrorContains(t, err, tc.want)
		})
	}
	m, err := New(ok)
	require.NoError(t, err)
	require.Len(t, m.Thresholds(), 8, "defaults plus allocatable plus derived containerfs")
}

func memHog(e *env, pods ...*v1.Pod) []statsapi.PodStats {
	var out []statsapi.PodStats
	for i, p := range pods {
		out = append(out, podStats(p, podUsage{mem: uint64(i+1) * 100 * Mi}))
	}
	return out
}

func TestSynchronizeHardEvictsOnePodPerPass(t *testing.T) {
	small, big, critical := newPod("small"), newPod("big", withGrace(30)), newPod("static", withAnnotation(kubetypes.ConfigSourceAnnotationKey, "file"))
	e := newEnv(t, Config{}, small, big, critical)
	ctx := context.Background()

	res, err := e.m.Synchronize(ctx)
	require.NoError(t, err)
	require.Nil(t, res.Evicted)
	require.False(t, e.m.IsUnderMemoryPressure())

	stats := []statsapi.PodStats{podStats(small, podUsage{mem: 100 * Mi}), podStats(big, podUsage{mem: 300 * Mi}), podStats(critical, podUsage{mem: 2 * Gi})}
	e.step(time.Second)
	e.observe(func(n *node) { n.memAvail = 50 * Mi }, stats...)
	res, err = e.m.Synchronize(ctx)
	require.NoError(t, err)
	require.Equal(t, "big", res.Evicted.Name, "the critical static pod is skipped")
	require.Equal(t, SignalMemoryAvailable, res.Signal)
	require.Equal(t, int64(1), res.GracePeriodSeconds, "hard eviction ignores terminationGracePeriodSeconds")
	require.True(t, e.m.IsUnderMemoryPressure())
	require.False(t, e.m.IsUnderDiskPressure())
	require.False(t, e.m.IsUnderPIDPressure())
	k := e.host.kills()
	require.Len(t, k, 1)
	require.Equal(t, v1.PodFailed, k[0].status.Phase)
	require.Equal(t, "Evicted", k[0].status.Reason)
	require.Equal(t, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "+
		"Container app was using 300Mi, request is 0, has larger consumption of memory. ", k[0].status.Message)
	require.Len(t, k[0].status.Conditions, 1)
	require.Equal(t, v1.DisruptionTarget, k[0].status.Conditions[0].Type)
	require.Equal(t, v1.PodReasonTerminationByKubelet, k[0].status.Conditions[0].Reason)

	// The same sample does not evict again.
	res, err = e.m.Synchronize(ctx)
	require.NoError(t, err)
	require.Nil(t, res.Evicted)
	require.Len(t, e.host.kills(), 1)

	// A fresh sample still under pressure evicts the next pod, one per pass.
	e.host.setPods(small, critical)
	e.step(time.Second)
	e.observe(func(n *node) { n.memAvail = 50 * Mi }, stats[0], stats[2])
	res, err = e.m.Synchronize(ctx)
	require.NoError(t, err)
	require.Equal(t, "small", res.Evicted.Name)
	require.Len(t, e.host.kills(), 2)

	// Only the critical pod is left: nothing is evicted.
	e.host.setPods(critical)
	e.step(time.Second)
	e.observe(func(n *node) { n.memAvail = 50 * Mi }, stats[2])
	res, err = e.m.Synchronize(ctx)
	require.NoError(t, err)
	require.Nil(t, res.Evicted)
	require.Equal(t, "static", e.host.activePods()[0].Name)
}

func TestSynchronizeSoftGracePeriod(t *testing.T) {
	ts, err := ParseThresholds(ThresholdSpec{
		Hard:            map[string]string{},
		Soft:            map[string]string{"memory.available": "1Gi"},
		SoftGracePeriod: map[string]string{"memory.available": "1m"},
	})
	require.NoError(t, err)
	a, b := newPod("a", withGrace(60)), newPod("b", withGrace(5))
	e := newEnv(t, Config{Thresholds: ts, MaxPodGracePeriodSeconds: 30}, a, b)
	ctx := context.Background()
	low := func(n *node) { n.memAvail = 500 * Mi }

	e.observe(low, podStats(a, podUsage{mem: 400 * Mi}), podStats(b, podUsage{mem: 100 * Mi}))
	res, err := e.m.Synchronize(ctx)
	require.NoError(t, err)
	require.Nil(t, res.Evicted, "grace period not yet elapsed")
	require.True(t, e.m.IsUnderMemoryPressure(), "the condition is reported at once")

	e.step(59 * time.Second)
	e.observe(low, podStats(a, podUsage{mem: 400 * Mi}), podStats(b, podUsage{mem: 100 * Mi}))
	res, err = e.m.Synchronize(ctx)
	require.NoError(t, err)
	require.Nil(t, res.Evicted)

	e.step(time.Second)
	e.observe(low, podStats(a, podUsage{mem: 400 * Mi}), podStats(b, podUsage{mem: 100 * Mi}))
	res, err = e.m.Synchronize(ctx)
	require.NoError(t, err)
	require.Equal(t, "a", res.Evicted.Name)
	require.Equal(t, int64(30), res.GracePeriodSeconds, "capped by MaxPodGracePeriodSeconds")

	// Recovery resets the grace period.
	e.step(time.Second)
	e.observe(nil)
	_, err = e.m.Synchronize(ctx)
	require.NoError(t, err)
	e.step(time.Second)
	e.observe(low, podStats(b, podUsage{mem: 100 * Mi}))
	e.host.setPods(b)
	res, err = e.m.Synchronize(ctx)
	require.NoError(t, err)
	require.Nil(t, res.Evicted)
	e.step(time.Minute)
	e.observe(low, podStats(b, podUsage{mem: 100 * Mi}))
	res, err = e.m.Synchronize(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(5), res.GracePeriodSeconds, "the pod's shorter terminationGracePeriodSeconds wins")
}

func TestSynchronizeTransitionPeriod(t *testing.T) {
	e := newEnv(t, Config{PressureTransitionPeriod: 5 * time.Minute})
	ctx := context.Background()
	e.observe(func(n *node) { n.fsAvail = Gi })
	_, err := e.m.Synchronize(ctx)
	require.NoError(t, err)
	require.True(t, e.m.IsUnderDiskPressure())
	require.Equal(t, []v1.NodeConditionType{v1.NodeDiskPressure}, e.m.Conditions())

	for _, d := range []time.Duration{time.Second, 4*time.Minute + 58*time.Second} {
		e.step(d)
		e.observe(nil)
		_, err = e.m.Synchronize(ctx)
		require.NoError(t, err)
		require.True(t, e.m.IsUnderDiskPressure(), "held for the transition period")
	}
	require.False(t, e.m.Admit(newPod("x", withMemRequest("1Gi"))).Admit)
	e.step(time.Second)
	e.observe(nil)
	_, err = e.m.Synchronize(ctx)
	require.NoError(t, err)
	require.False(t, e.m.IsUnderDiskPressure())
	require.True(t, e.m.Admit(newPod("x")).Admit)
}

func TestSynchronizeReclaimsBeforeEvicting(t *testing.T) {
	p := newPod("p")
	var calls []string
	var e *env
	cfg := Config{
		DeleteUnusedContainers: func(context.Context) error { calls = append(calls, "containers"); return nil },
		DeleteUnusedImages: func(context.Context) error {
			calls = append(calls, "images")
			e.observe(nil, podStats(p, podUsage{rootfs: Gi})) // images freed enough
			return nil
		},
	}
	e = newEnv(t, cfg, p)
	ctx := context.Background()
	e.observe(func(n *node) { n.fsAvail = Gi }, podStats(p, podUsage{rootfs: Gi}))
	res, err := e.m.Synchronize(ctx)
	require.NoError(t, err)
	require.True(t, res.Reclaimed)
	require.Nil(t, res.Evicted)
	require.Equal(t, []string{"containers", "images"}, calls)
	require.Empty(t, e.host.kills())

	// Reclaim that does not help: a pod is evicted in the same pass.
	cfg.DeleteUnusedImages = func(context.Context) error { return errors.New("gc failed") }
	e = newEnv(t, cfg, p)
	e.observe(func(n *node) { n.fsAvail = Gi }, podStats(p, podUsage{rootfs: Gi}))
	res, err = e.m.Synchronize(ctx)
	require.NoError(t, err)
	require.False(t, res.Reclaimed)
	require.Equal(t, "p", res.Evicted.Name)
	require.Equal(t, v1.ResourceEphemeralStorage, res.Resource)

	// Memory pressure never calls the disk reclaimers.
	calls = nil
	e = newEnv(t, cfg, p)
	e.observe(func(n *node) { n.memAvail = Mi }, podStats(p, podUsage{mem: Gi}))
	res, err = e.m.Synchronize(ctx)
	require.NoError(t, err)
	require.Equal(t, "p", res.Evicted.Name)
	require.Empty(t, calls)
}

func TestSynchronizeMinReclaim(t *testing.T) {
	ts, err := ParseThresholds(ThresholdSpec{
		Hard:           map[string]string{"memory.available": "1Gi"},
		MinimumReclaim: map[string]string{"memory.available": "500Mi"},
	})
	require.NoError(t, err)
	a, b, c := newPod("a"), newPod("b"), newPod("c")
	e := newEnv(t, Config{Thresholds: ts}, a, b, c)
	ctx := context.Background()
	stats := memHog(e, a, b, c)
	for i, tc := range []struct {
		avail   uint64
		evicted bool
	}{
		{900 * Mi, true},   // below the threshold
		{1200 * Mi, true},  // above it but not by the minimum reclaim
		{1600 * Mi, false}, // reclaimed enough
		{1200 * Mi, false}, // a new streak compares with the threshold alone
	} {
		e.step(time.Second)
		e.observe(func(n *node) { n.memAvail = tc.avail }, stats...)
		res, err := e.m.Synchronize(ctx)
		require.NoError(t, err)
		require.Equal(t, tc.evicted, res.Evicted != nil, "step %d", i)
	}
}

func TestSynchronizePIDPressure(t *testing.T) {
	ts, err := ParseThresholds(ThresholdSpec{Hard: map[string]string{"pid.available": "10%"}})
	require.NoError(t, err)
	a, b := newPod("a"), newPod("b")
	e := newEnv(t, Config{Thresholds: ts}, a, b)
	e.observe(func(n *node) { n.procs = 32000 }, podStats(a, podUsage{procs: 10}), podStats(b, podUsage{procs: 30000}))
	res, err := e.m.Synchronize(context.Background())
	require.NoError(t, err)
	require.Equal(t, "b", res.Evicted.Name)
	require.True(t, e.m.IsUnderPIDPressure())
	require.Equal(t, ResourcePIDs, res.Resource)
}

func TestSynchronizeErrors(t *testing.T) {
	p := newPod("p")
	e := newEnv(t, Config{}, p)
	e.host.getErr = errors.New("boom")
	_, err := e.m.Synchronize(context.Background())
	require.ErrorContains(t, err, "boom")

	e = newEnv(t, Config{KillPod: nil}, p)
	e.m.cfg.KillPod = func(context.Context, *v1.Pod, int64, func(*v1.PodStatus)) error { return errors.New("kill failed") }
	e.observe(func(n *node) { n.memAvail = Mi }, podStats(p, podUsage{mem: Gi}))
	res, err := e.m.Synchronize(context.Background())
	require.ErrorContains(t, err, "kill failed")
	require.Equal(t, "p", res.Evicted.Name, "the attempted eviction is reported")

	e = newEnv(t, Config{Thresholds: []Threshold{}}, p)
	e.observe(func(n *node) { n.memAvail = Mi })
	res, err = e.m.Synchronize(context.Background())
	require.NoError(t, err)
	require.Nil(t, res.Evicted, "no thresholds: eviction disabled")
}
