package syncloop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/prober"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type hookLog struct{ lines []string }

// newCoreLoop returns a Loop driven through Iterate, fed by Set on the
// external sources "a" and "b".
func newCoreLoop(t *testing.T, mut func(*Config)) (*Loop, *recorder, *clocktesting.FakeClock, *hookLog) {
	t.Helper()
	rec := &recorder{}
	clk := clocktesting.NewFakeClock(t0)
	hooks := &hookLog{}
	cfg := Config{
		Handler:         rec,
		ExternalSources: []string{"a", "b"},
		Clock:           clk,
		OnContainerDied: func(_ context.Context, uid types.UID, id containerid.ID) {
			hooks.lines = append(hooks.lines, "died "+string(uid)+" "+id.String())
		},
		OnProbeResult: func(_ context.Context, p prober.ProbeType, u prober.Update) {
			hooks.lines = append(hooks.lines, "probe "+p.String()+" "+u.ContainerID.String()+" "+u.Result.String())
		},
	}
	if mut != nil {
		mut(&cfg)
	}
	l, err := New(cfg)
	require.NoError(t, err)
	return l, rec, clk, hooks
}

func TestConfigRoutingTranscript(t *testing.T) {
	ctx := context.Background()
	l, rec, _, _ := newCoreLoop(t, nil)
	deleted := metav1.NewTime(t0)
	steps := []struct {
		name string
		pods func() []*v1.Pod
		want []string
	}{
		{"first snapshot adds", func() []*v1.Pod { return []*v1.Pod{testPod("p1", "u1"), testPod("p2", "u2")} }, []string{"ADD p1,p2"}},
		{"same snapshot is silent", func() []*v1.Pod { return []*v1.Pod{testPod("p1", "u1"), testPod("p2", "u2")} }, nil},
		{"spec change updates", func() []*v1.Pod {
			p := testPod("p1", "u1")
			p.Spec.Containers[0].Image = "busybox:1.37"
			return []*v1.Pod{p, testPod("p2", "u2")}
		}, []string{"UPDATE p1"}},
		{"status change reconciles", func() []*v1.Pod {
			p := testPod("p1", "u1")
			p.Spec.Containers[0].Image = "busybox:1.37"
			p2 := testPod("p2", "u2")
			p2.Status.Phase = v1.PodRunning
			return []*v1.Pod{p, p2}
		}, []string{"RECONCILE p2"}},
		{"graceful delete is DELETE, routed as update", func() []*v1.Pod {
			p := testPod("p1", "u1")
			p.Spec.Containers[0].Image = "busybox:1.37"
			p.DeletionTimestamp = &deleted
			p2 := testPod("p2", "u2")
			p2.Status.Phase = v1.PodRunning
			return []*v1.Pod{p, p2}
		}, []string{"UPDATE p1"}},
		{"gone pods are removed, new ones added, in that order", func() []*v1.Pod {
			p2 := testPod("p2", "u2")
			p2.Status.Phase = v1.PodRunning
			return []*v1.Pod{p2, testPod("p3", "u3")}
		}, []string{"REMOVE p1", "ADD p3"}},
	}
	for _, s := range steps {
		l.Set(ctx, "a", s.pods())
		l.Iterate(ctx)
		require.Equal(t, s.want, rec.take(), s.name)
	}
}

func TestConfigOpsAndSourceAnnotations(t *testing.T) {
	ctx := context.Background()
	var got []PodUpdate
	m := newMerger(func() time.Time { return t0 }, nil, func(u []PodUpdate) { got = append(got, u...) })
	m.set(ctx, "a", []*v1.Pod{testPod("p1", "u1")})
	require.Len(t, got, 1)
	require.Equal(t, ADD, got[0].Op)
	ann := got[0].Pods[0].Annotations
	require.Equal(t, "a", ann[kubetypes.ConfigSourceAnnotationKey])
	require.Equal(t, t0.Format(time.RFC3339Nano), ann[kubetypes.ConfigFirstSeenAnnotationKey])

	// A duplicate full name in one snapshot is dropped.
	got = nil
	m.set(ctx, "b", []*v1.Pod{testPod("p1", "x1"), testPod("p1", "x2")})
	require.Len(t, got, 1)
	require.Len(t, got[0].Pods, 1)
	require.Equal(t, types.UID("x1"), got[0].Pods[0].UID)

	// An empty first snapshot still yields an (empty) ADD so the source is
	// seen.
	got = nil
	m.set(ctx, "c", nil)
	require.Equal(t, []PodUpdate{{Op: ADD, Source: "c", Pods: []*v1.Pod{}}}, got)
	got = nil
	m.set(ctx, "c", nil)
	require.Empty(t, got)
	require.True(t, m.seenAll([]string{"a", "b", "c"}))
	require.False(t, m.seenAll([]string{"d"}))

	// OnPodObserved sees every delivery of the API server source's pods,
	// changed or not, and nothing of other sources.
	var observed []string
	m.observe = func(p *v1.Pod) { observed = append(observed, p.Name) }
	m.set(ctx, kubetypes.APIServerSource, []*v1.Pod{testPod("p2", "v2")})
	m.set(ctx, kubetypes.APIServerSource, []*v1.Pod{testPod("p2", "v2"), testPod("p3", "v3")})
	m.set(ctx, "file", []*v1.Pod{testPod("s1", "w1")})
	require.Equal(t, []string{"p2", "p2", "p3"}, observed)
}

// The merger skips the comparison of what it has already seen: the same
// object again, or an API server pod at the same resource version; every
// other source is compared field by field whatever its resource version.
func TestMergerSkipsSeenVersions(t *testing.T) {
	ctx := context.Background()
	var got []string
	m := newMerger(func() time.Time { return t0 }, nil, func(us []PodUpdate) {
		for _, u := range us {
			for _, p := range u.Pods {
				got = append(got, u.Op.String()+" "+p.Name+" "+p.Labels["v"])
			}
		}
	})
	version := func(rv, label string) *v1.Pod {
		p := testPod("p", "u")
		p.ResourceVersion, p.Labels = rv, map[string]string{"v": label}
		return p
	}
	for _, source := range []string{kubetypes.APIServerSource, kubetypes.FileSource} {
		got = nil
		first := version("1", "a")
		m.set(ctx, source, []*v1.Pod{first})
		m.set(ctx, source, []*v1.Pod{first})
		require.Nil(t, first.Annotations, "what a source passes is not modified")
		m.set(ctx, source, []*v1.Pod{version("1", "b")})
		m.set(ctx, source, []*v1.Pod{version("2", "c")})
		m.set(ctx, source, []*v1.Pod{version("2", "c")})
		m.set(ctx, source, []*v1.Pod{version("3", "c")})
		want := []string{"ADD p a", "UPDATE p b", "UPDATE p c"}
		if source == kubetypes.APIServerSource {
			want = []string{"ADD p a", "UPDATE p c"}
		}
		require.Equal(t, want, got, source)
	}
}

func TestClassify(t *testing.T) {
	base := testPod("p", "u")
	now := metav1.NewTime(t0)
	cases := []struct {
		name string
		mut  func(p *v1.Pod)
		want change
	}{
		{"identical", func(*v1.Pod) {}, changeNone},
		{"local annotation only", func(p *v1.Pod) {
			p.Annotations = map[string]string{kubetypes.ConfigSourceAnnotationKey: "x", kubetypes.ConfigFirstSeenAnnotationKey: "y"}
		}, changeNone},
		{"status", func(p *v1.Pod) { p.Status.Phase = v1.PodRunning }, changeStatus},
		{"label", func(p *v1.Pod) { p.Labels = map[string]string{"a": "b"} }, changeUpdate},
		{"annotation", func(p *v1.Pod) { p.Annotations = map[string]string{"a": "b"} }, changeUpdate},
		{"spec", func(p *v1.Pod) { p.Spec.Hostname = "h" }, changeUpdate},
		{"deletion", func(p *v1.Pod) { p.DeletionTimestamp = &now }, changeGracefulDelete},
		{"spec and status", func(p *v1.Pod) { p.Spec.Hostname = "h"; p.Status.Phase = v1.PodRunning }, changeUpdate},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ref := base.DeepCopy()
			c.mut(ref)
			require.Equal(t, c.want, classify(base, ref))
		})
	}
}

func TestPLEGRouting(t *testing.T) {
	ctx := context.Background()
	l, rec, _, hooks := newCoreLoop(t, nil)
	l.Set(ctx, "a", []*v1.Pod{testPod("p1", "u1"), testPod("p2", "u2")})
	l.Iterate(ctx)
	rec.take()

	l.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: "u1", Type: pleg.ContainerStarted, ContainerID: containerid.ID{ID: "c1"}})
	l.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: "u1", Type: pleg.ContainerChanged, ContainerID: containerid.ID{ID: "c1"}})
	l.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: "u2", Type: pleg.ContainerRemoved, ContainerID: containerid.ID{ID: "c9"}})
	l.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: "gone", Type: pleg.PodSync})
	l.Iterate(ctx)
	require.Equal(t, []string{"SYNC p1"}, rec.take(), "one sync per pod; removed containers and unknown pods are not synced")

	l.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: "u2", Type: pleg.ContainerDied, ContainerID: containerid.ID{ID: "c2"}})
	l.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: "gone", Type: pleg.ContainerDied, ContainerID: containerid.ID{ID: "c3"}})
	l.Iterate(ctx)
	require.Equal(t, []string{"SYNC p2"}, rec.take())
	require.Equal(t, []string{"died u2 c2", "died gone c3"}, hooks.lines, "container cleanup runs even for unknown pods, like upstream")

	// After REMOVE the pod is no longer resolvable.
	l.Set(ctx, "a", []*v1.Pod{testPod("p1", "u1")})
	l.Iterate(ctx)
	require.Equal(t, []string{"REMOVE p2"}, rec.take())
	l.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: "u2", Type: pleg.PodSync})
	l.Iterate(ctx)
	require.Empty(t, rec.take())
	_, ok := l.PodByUID("u2")
	require.False(t, ok, "the index the host can read forgot the removed pod")
	p1, ok := l.PodByUID("u1")
	require.True(t, ok)
	require.Equal(t, "p1", p1.Name)
	require.Equal(t, []*v1.Pod{p1}, l.Pods())
}

func TestMirrorPodsAreNotResolved(t *testing.T) {
	ctx := context.Background()
	l, rec, _, _ := newCoreLoop(t, nil)
	mirror := testPod("static-node-a", "m1")
	mirror.Annotations = map[string]string{kubetypes.ConfigMirrorAnnotationKey: "hash"}
	l.Set(ctx, "a", []*v1.Pod{mirror})
	l.Iterate(ctx)
	rec.take()
	l.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: "m1", Type: pleg.PodSync})
	l.Iterate(ctx)
	require.Empty(t, rec.take())
}

func TestProbeRouting(t *testing.T) {
	ctx := context.Background()
	l, rec, _, hooks := newCoreLoop(t, nil)
	l.Set(ctx, "a", []*v1.Pod{testPod("p1", "u1"), testPod("p2", "u2"), testPod("p3", "u3")})
	l.Iterate(ctx)
	rec.take()
	cases := []struct {
		name      string
		probe     prober.ProbeType
		update    prober.Update
		wantSync  []string
		wantHooks []string
	}{
		{"liveness success does nothing", prober.Liveness, prober.Update{ContainerID: containerid.ID{Type: "c", ID: "1"}, Result: prober.Success, PodUID: "u1"}, nil, nil},
		{"liveness failure syncs", prober.Liveness, prober.Update{ContainerID: containerid.ID{Type: "c", ID: "1"}, Result: prober.Failure, PodUID: "u1"}, []string{"SYNC p1"}, nil},
		{"readiness notifies and syncs", prober.Readiness, prober.Update{ContainerID: containerid.ID{Type: "c", ID: "2"}, Result: prober.Success, PodUID: "u2"}, []string{"SYNC p2"}, []string{"probe Readiness c://2 Success"}},
		{"startup notifies and syncs", prober.Startup, prober.Update{ContainerID: containerid.ID{Type: "c", ID: "3"}, Result: prober.Failure, PodUID: "u3"}, []string{"SYNC p3"}, []string{"probe Startup c://3 Failure"}},
		{"unknown pod notifies only", prober.Readiness, prober.Update{ContainerID: containerid.ID{Type: "c", ID: "4"}, Result: prober.Success, PodUID: "x"}, nil, []string{"probe Readiness c://4 Success"}},
	}
	for _, c := range cases {
		hooks.lines = nil
		l.HandleProbeUpdate(c.probe, c.update)
		l.Iterate(ctx)
		require.Equal(t, c.wantSync, rec.take(), c.name)
		require.Equal(t, c.wantHooks, hooks.lines, c.name)
	}

	// Results of one probe coalesce to the latest; PLEG and probes share
	// one HandlePodSyncs call.
	hooks.lines = nil
	l.HandleProbeUpdate(prober.Readiness, prober.Update{ContainerID: containerid.ID{Type: "c", ID: "2"}, Result: prober.Failure, PodUID: "u2"})
	l.HandleProbeUpdate(prober.Readiness, prober.Update{ContainerID: containerid.ID{Type: "c", ID: "2"}, Result: prober.Success, PodUID: "u2"})
	l.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: "u1", Type: pleg.ContainerStarted, ContainerID: containerid.ID{ID: "1"}})
	l.Iterate(ctx)
	require.Equal(t, []string{"SYNC p1,p2"}, rec.take())
	require.Equal(t, []string{"probe Readiness c://2 Success"}, hooks.lines)
}

func TestSyncTickAsksForDuePods(t *testing.T) {
	ctx := context.Background()
	calls := 0
	l, rec, clk, _ := newCoreLoop(t, func(c *Config) {
		c.ExternalSources = nil
		c.PodsToSync = func() []types.UID {
			calls++
			if calls%2 == 0 {
				return nil
			}
			return []types.UID{"d", "not-known"}
		}
		c.PodByUID = func(uid types.UID) (*v1.Pod, bool) {
			if uid == "d" {
				return testPod("due", "d"), true
			}
			return nil, false
		}
	})
	require.Equal(t, time.Second, l.Iterate(ctx))
	require.Equal(t, 0, calls)
	clk.Step(999 * time.Millisecond)
	require.Equal(t, time.Millisecond, l.Iterate(ctx))
	clk.Step(time.Millisecond)
	l.Iterate(ctx)
	require.Equal(t, 1, calls)
	require.Equal(t, []string{"SYNC due"}, rec.take(), "a UID the loop cannot resolve is dropped")
	clk.Step(time.Second)
	require.Equal(t, time.Second, l.Iterate(ctx), "housekeeping (2s) just ran with no sources; next is the sync tick")
	require.Equal(t, 2, calls)
	require.Equal(t, []string{"CLEANUP "}, rec.take(), "an empty PodsToSync answer dispatches nothing")
	// A long stall fires each tick once, not once per missed period.
	clk.Step(10 * time.Second)
	l.Iterate(ctx)
	require.Equal(t, 3, calls)
	require.Equal(t, []string{"SYNC due", "CLEANUP "}, rec.take())
}

func TestHousekeepingWaitsForAllSources(t *testing.T) {
	ctx := context.Background()
	l, rec, clk, _ := newCoreLoop(t, func(c *Config) { c.SyncPeriod = time.Hour })
	l.Iterate(ctx)
	for range 3 {
		clk.Step(2 * time.Second)
		l.Iterate(ctx)
	}
	require.Empty(t, rec.take(), "no source has reported")
	require.False(t, l.SourcesReady())

	l.Set(ctx, "a", []*v1.Pod{testPod("p1", "u1")})
	clk.Step(2 * time.Second)
	l.Iterate(ctx)
	require.Equal(t, []string{"ADD p1"}, rec.take(), "source b has not reported")

	l.Set(ctx, "b", nil)
	l.Iterate(ctx)
	require.Equal(t, []string{"ADD "}, rec.take(), "an empty first snapshot is dispatched so readiness is seen")
	require.True(t, l.SourcesReady())
	clk.Step(2 * time.Second)
	l.Iterate(ctx)
	require.Equal(t, []string{"CLEANUP "}, rec.take())

	// A cleanup error is logged, not fatal.
	rec.cleanErr = errors.New("boom")
	clk.Step(2 * time.Second)
	l.Iterate(ctx)
	require.Equal(t, []string{"CLEANUP "}, rec.take())
}

func TestRuntimeUnhealthyBacksOffAndKeepsConfig(t *testing.T) {
	ctx := context.Background()
	healthErr := errors.New("PLEG is not healthy")
	var health error = healthErr
	l, rec, clk, _ := newCoreLoop(t, func(c *Config) {
		c.ExternalSources = []string{"a"}
		c.RuntimeHealth = func() error { return health }
	})
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 5000, 5000}
	for i, w := range want {
		l.Set(ctx, "a", []*v1.Pod{testPod("p", types.UID(rune('a'+i)))}) // sources never block
		l.HandlePLEGEvent(pleg.PodLifecycleEvent{ID: types.UID(rune('a' + i)), Type: pleg.PodSync})
		require.Equal(t, w*time.Millisecond, l.Iterate(ctx))
		require.True(t, l.Unhealthy())
		require.True(t, clk.Now().Equal(l.LastIteration()), "the loop monitor advances while unhealthy")
		clk.Step(w * time.Millisecond)
	}
	require.Empty(t, rec.take(), "nothing is dispatched while the runtime is unhealthy")
	require.False(t, l.SourcesReady())

	health = nil
	l.Iterate(ctx)
	require.False(t, l.Unhealthy())
	got := rec.take()
	// Every recorded update arrives, in order: the first ADD, then for each
	// later snapshot REMOVE of the previous pod and ADD of the new one,
	// then the due sync tick and housekeeping.
	require.Equal(t, "ADD p", got[0])
	require.Len(t, got, 1+2*(len(want)-1)+2)
	require.Equal(t, []string{"SYNC p", "CLEANUP "}, got[len(got)-2:], "the PLEG event resolves to the current pod")
	require.True(t, l.SourcesReady())

	// The backoff restarts from 100ms after a recovery.
	health = healthErr
	require.Equal(t, 100*time.Millisecond, l.Iterate(ctx))
}

func TestNewValidates(t *testing.T) {
	h := &recorder{}
	cases := []struct {
		name string
		cfg  Config
	}{
		{"no handler", Config{}},
		{"nil source", Config{Handler: h, Sources: []Source{nil}}},
		{"duplicate source", Config{Handler: h, Sources: []Source{newTestSource("a")}, ExternalSources: []string{"a"}}},
		{"empty source", Config{Handler: h, ExternalSources: []string{""}}},
		{"negative period", Config{Handler: h, SyncPeriod: -1}},
		{"backoff order", Config{Handler: h, BackoffInitial: time.Second, BackoffMax: time.Millisecond}},
	}
	for _, c := range cases {
		_, err := New(c.cfg)
		require.ErrorIs(t, err, ErrInvalidConfig, c.name)
	}
	l, err := New(Config{Handler: h})
	require.NoError(t, err)
	require.Equal(t, DefaultSyncPeriod, l.cfg.SyncPeriod)
	require.Equal(t, DefaultHousekeepingPeriod, l.cfg.HousekeepingPeriod)
	require.True(t, l.LastIteration().IsZero())
}

func TestPolicies(t *testing.T) {
	require.Equal(t, t0.Add(2*time.Second), nextTick(t0.Add(time.Second), t0.Add(time.Second), time.Second))
	require.Equal(t, t0.Add(11*time.Second), nextTick(t0, t0.Add(10*time.Second), time.Second))
	for _, e := range []pleg.EventType{pleg.ContainerStarted, pleg.ContainerDied, pleg.PodSync, pleg.ContainerChanged} {
		require.True(t, isSyncWorthy(e))
	}
	require.False(t, isSyncWorthy(pleg.ContainerRemoved))
	require.Equal(t, "RECONCILE", RECONCILE.String())
	require.Equal(t, "UNKNOWN", Op(42).String())
}
