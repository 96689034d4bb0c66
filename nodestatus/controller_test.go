package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeclient/clientset"
)

// agent is a controller over a fake clientset with switchable health.
type agent struct {
	cs       *fake.Clientset
	clk      *clocktesting.FakeClock
	ctl      *Controller
	pressure atomic.Bool
	down     atomic.Bool
	events   []event
	mu       sync.Mutex
}

func newAgent(t *testing.T, mutate func(*Config), objs ...runtime.Object) *agent {
	t.Helper()
	a := &agent{cs: fake.NewClientset(objs...), clk: clocktesting.NewFakeClock(time.Unix(10000, 0))}
	rec := func(typ, reason, msg string) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.events = append(a.events, event{typ, reason, msg})
	}
	var b Builder
	b.Add(MachineInfo(MachineConfig{
		Machine: func() (*cadvisorapi.MachineInfo, error) {
			return &cadvisorapi.MachineInfo{NumCores: 2, MemoryCapacity: 4 << 30, BootID: "b"}, nil
		},
		Capacity: func() v1.ResourceList { return v1.ResourceList{v1.ResourceEphemeralStorage: q("10Gi")} },
	}))
	b.Add(GoRuntime(), nil)
	b.Add(MemoryPressureCondition(a.pressure.Load, rec))
	b.Add(ReadyCondition(ReadyConfig{Recorder: rec, RuntimeErrors: func() error {
		if a.down.Load() {
			return errors.New("container runtime is down")
		}
		return nil
	}}))
	setters, err := b.Setters()
	require.NoError(t, err)
	cfg := Config{Client: clientset.Wrap(a.cs), NodeName: "n1", Setters: setters, Clock: a.clk,
		ReportJitter: -1, Labels: map[string]string{"role": "edge"},
		Taints: []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}}}
	if mutate != nil {
		mutate(&cfg)
	}
	a.ctl, err = New(cfg)
	require.NoError(t, err)
	return a
}

// verbs returns "verb subresource" of the recorded actions and clears them.
func (a *agent) verbs() []string {
	var out []string
	for _, act := range a.cs.Actions() {
		s := act.GetVerb()
		if act.GetSubresource() != "" {
			s += " " + act.GetSubresource()
		}
		out = append(out, s)
	}
	a.cs.ClearActions()
	return out
}

// flipPressure moves the clock a status period on, sets memory pressure and
// syncs; the pass must patch. It returns the requests the pass made.
func (a *agent) flipPressure(t *testing.T, ctx context.Context, on bool) []string {
	t.Helper()
	a.clk.Step(10 * time.Second)
	a.pressure.Store(on)
	res, err := a.ctl.Sync(ctx)
	require.NoError(t, err)
	require.True(t, res.Patched)
	return a.verbs()
}

func (a *agent) server(t *testing.T) *v1.Node {
	n, err := a.cs.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, "", "n1")
	require.NoError(t, err)
	return n.(*v1.Node)
}

func TestConfigValidation(t *testing.T) {
	cs := fake.NewClientset()
	for name, cfg := range map[string]Config{
		"no client":        {NodeName: "n"},
		"no name":          {Client: clientset.Wrap(cs)},
		"negative update":  {Client: clientset.Wrap(cs), NodeName: "n", UpdateFrequency: -time.Second},
		"negative timeout": {Client: clientset.Wrap(cs), NodeName: "n", RequestTimeout: -1},
		"report < update":  {Client: clientset.Wrap(cs), NodeName: "n", UpdateFrequency: time.Minute, ReportFrequency: time.Second},
		"nil setter":       {Client: clientset.Wrap(cs), NodeName: "n", Setters: []Setter{nil}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(cfg)
			require.ErrorIs(t, err, ErrInvalidConfig)
		})
	}
}

func TestRegisterThenPatchOnlyOnChange(t *testing.T) {
	a := newAgent(t, nil)
	ctx := context.Background()
	res, err := a.ctl.Sync(ctx)
	require.NoError(t, err)
	require.Equal(t, SyncResult{Registered: true, Ready: true}, res)
	require.Equal(t, []string{"create"}, a.verbs(), "the create carries the status: no GET, no extra PATCH")

	n := a.server(t)
	require.Equal(t, map[string]string{"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux", "kubernetes.io/arch": n.Labels["kubernetes.io/arch"],
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": n.Labels["kubernetes.io/arch"], "role": "edge"}, n.Labels)
	require.Equal(t, "true", n.Annotations[AnnotationAttachDetach])
	require.Equal(t, []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}}, n.Spec.Taints)
	require.Equal(t, v1.NodeReady, n.Status.Conditions[len(n.Status.Conditions)-1].Type)

	// Nothing changes for 4m50s: no request at all.
	for range 29 {
		a.clk.Step(10 * time.Second)
		res, err = a.ctl.Sync(ctx)
		require.NoError(t, err)
		require.False(t, res.Patched)
	}
	require.Empty(t, a.verbs())

	// The report period (5m, jitter 0 with Rand 0.5) forces a heartbeat.
	a.clk.Step(10 * time.Second)
	res, err = a.ctl.Sync(ctx)
	require.NoError(t, err)
	require.True(t, res.Patched)
	require.Equal(t, []string{"patch status"}, a.verbs())
	require.Equal(t, a.clk.Now().Unix(), a.server(t).Status.Conditions[0].LastHeartbeatTime.Unix())

	// A flip is reported at once, with an event.
	a.clk.Step(10 * time.Second)
	a.pressure.Store(true)
	res, err = a.ctl.Sync(ctx)
	require.NoError(t, err)
	require.True(t, res.Patched)
	require.Equal(t, []string{"patch status"}, a.verbs())
	mp := findCondition(a.server(t), v1.NodeMemoryPressure)
	require.Equal(t, v1.ConditionTrue, mp.Status)
	require.Equal(t, a.clk.Now().Unix(), mp.LastTransitionTime.Unix())
	require.Equal(t, "NodeHasInsufficientMemory", a.events[len(a.events)-1].reason)
}

func TestReportJitter(t *testing.T) {
	for _, tc := range []struct {
		rand float64
		want time.Duration
	}{{0, 150 * time.Second}, {0.99, 450 * time.Second}} {
		a := newAgent(t, func(c *Config) { c.ReportJitter, c.Rand = DefaultReportJitter, func() float64 { return tc.rand } })
		ctx := context.Background()
		_, err := a.ctl.Sync(ctx)
		require.NoError(t, err)
		a.verbs()
		var patchedAt time.Duration
		for elapsed := 10 * time.Second; elapsed <= 10*time.Minute; elapsed += 10 * time.Second {
			a.clk.Step(10 * time.Second)
			res, err := a.ctl.Sync(ctx)
			require.NoError(t, err)
			if res.Patched {
				patchedAt = elapsed
				break
			}
		}
		require.InDelta(t, tc.want.Seconds(), patchedAt.Seconds(), 10, "rand %v", tc.rand)
	}
}

func TestReconcileExistingNodeKeepsExternalConditions(t *testing.T) {
	existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1",
		Labels:      map[string]string{"kubernetes.io/hostname": "old", "keep": "me"},
		Annotations: map[string]string{"other": "x"}}}
	existing.Status.Conditions = []v1.NodeCondition{{Type: "NetworkUnavailable", Status: v1.ConditionFalse, Reason: "RouteCreated"}}
	a := newAgent(t, nil, existing)
	res, err := a.ctl.Sync(context.Background())
	require.NoError(t, err)
	require.True(t, res.Registered)
	require.Equal(t, []string{"create", "get", "patch status", "patch status"}, a.verbs())
	n := a.server(t)
	require.Equal(t, "n1", n.Labels["kubernetes.io/hostname"])
	require.Equal(t, "me", n.Labels["keep"])
	require.Equal(t, "true", n.Annotations[AnnotationAttachDetach])
	require.Equal(t, "x", n.Annotations["other"])
	require.NotNil(t, findCondition(n, "NetworkUnavailable"), "an external writer's condition survives")
	require.Equal(t, v1.NodeReady, n.Status.Conditions[len(n.Status.Conditions)-1].Type)
	require.False(t, n.Status.Capacity.Cpu().IsZero())
}

// TestLastNodeWithoutManagedFields: the controller keeps the Node the
// server returned without its managed fields, hands out fresh copies, and
// patches from it without reading the server again.
func TestLastNodeWithoutManagedFields(t *testing.T) {
	existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u1", Labels: map[string]string{"keep": "me"}}}
	a := newAgent(t, nil, existing)
	// The server's answers carry managed fields, as a real one's.
	a.cs.PrependReactor("patch", "nodes", func(act k8stesting.Action) (bool, runtime.Object, error) {
		handled, obj, err := k8stesting.ObjectReaction(a.cs.Tracker())(act)
		if n, ok := obj.(*v1.Node); ok && err == nil {
			n = n.DeepCopy()
			n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
			obj = n
		}
		return handled, obj, err
	})
	ctx := context.Background()
	_, err := a.ctl.Sync(ctx)
	require.NoError(t, err)
	a.verbs()

	n := a.ctl.Node()
	require.NotNil(t, n)
	require.Empty(t, n.ManagedFields)
	want := a.server(t).DeepCopy()
	want.ManagedFields = nil
	require.True(t, apiequality.Semantic.DeepEqual(want, n), "the last Node is the server's: %v", n)
	n.Labels["keep"] = "changed"
	require.Equal(t, "me", a.ctl.Node().Labels["keep"], "each call returns its own copy")

	require.Equal(t, []string{"patch status"}, a.flipPressure(t, ctx, true), "no GET: the patch starts from the kept Node")
	require.Equal(t, v1.ConditionTrue, findCondition(a.ctl.Node(), v1.NodeMemoryPressure).Status)
}

// xorCodec keeps encodings XORed with a key, and fails to decode while
// broken is set.
type xorCodec struct {
	encodes, decodes atomic.Int32
	broken           atomic.Bool
}

func (c *xorCodec) Encode(raw []byte) ([]byte, error) {
	c.encodes.Add(1)
	out := make([]byte, len(raw))
	for i, b := range raw {
		out[i] = b ^ 0x5a
	}
	return out, nil
}

func (c *xorCodec) Decode(dst, kept []byte) ([]byte, error) {
	c.decodes.Add(1)
	if c.broken.Load() {
		return nil, errors.New("broken")
	}
	for _, b := range kept {
		dst = append(dst, b^0x5a)
	}
	return dst, nil
}

// TestCodecKeepsTheLastNode: with a Codec the last Node is kept in its
// form and comes back whole; one that cannot give it back costs a GET.
func TestCodecKeepsTheLastNode(t *testing.T) {
	codec := &xorCodec{}
	a := newAgent(t, func(c *Config) { c.Codec = codec })
	ctx := context.Background()
	_, err := a.ctl.Sync(ctx)
	require.NoError(t, err)
	a.verbs()
	require.NotZero(t, codec.encodes.Load())
	want := a.server(t).DeepCopy()
	want.ManagedFields, want.TypeMeta = nil, metav1.TypeMeta{} // neither is kept
	require.True(t, apiequality.Semantic.DeepEqual(want, a.ctl.Node()), "the last Node is the server's")
	require.NotZero(t, codec.decodes.Load())

	require.Equal(t, []string{"patch status"}, a.flipPressure(t, ctx, true), "the patch starts from the kept Node")

	codec.broken.Store(true)
	require.Equal(t, []string{"get", "patch status"}, a.flipPressure(t, ctx, false),
		"a Node the Codec cannot give back is read from the server")
	require.Equal(t, v1.ConditionFalse, findCondition(a.server(t), v1.NodeMemoryPressure).Status)
}

// TestReRegisterZeroesExtendedResources: an agent whose device state was
// lost finds its Node registered with a device plugin's resources; they are
// zeroed until a provider reports them again, and kept without the hook.
func TestReRegisterZeroesExtendedResources(t *testing.T) {
	for _, reset := range []bool{true, false} {
		existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
		existing.Status.Capacity = v1.ResourceList{"example.com/gpu": resource.MustParse("4"), v1.ResourceCPU: resource.MustParse("8")}
		existing.Status.Allocatable = existing.Status.Capacity.DeepCopy()
		a := newAgent(t, func(c *Config) { c.ResetExtendedResources = func() bool { return reset } }, existing)
		_, err := a.ctl.Sync(context.Background())
		require.NoError(t, err)
		n := a.server(t)
		gpu, gpuAlloc := n.Status.Capacity["example.com/gpu"], n.Status.Allocatable["example.com/gpu"]
		if reset {
			assert.True(t, gpu.IsZero() && gpuAlloc.IsZero(), "zeroed: %v/%v", gpu.String(), gpuAlloc.String())
		} else {
			assert.Equal(t, int64(4), gpu.Value())
		}
		assert.False(t, n.Status.Capacity.Cpu().IsZero(), "native resources untouched")
	}
}

func TestRetriesReadFromServerAndRecover(t *testing.T) {
	var repeated atomic.Int32
	a := newAgent(t, func(c *Config) { c.OnRepeatedFailure = func(error) { repeated.Add(1) } })
	ctx := context.Background()
	_, err := a.ctl.Sync(ctx)
	require.NoError(t, err)
	a.verbs()

	var fails atomic.Int32
	fails.Store(3)
	a.cs.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fails.Add(-1) >= 0 {
			return true, nil, apierrors.NewServiceUnavailable("etcd down")
		}
		return false, nil, nil
	})
	a.down.Store(true)
	a.clk.Step(10 * time.Second)
	res, err := a.ctl.Sync(ctx)
	require.NoError(t, err)
	require.True(t, res.Patched)
	require.False(t, res.Ready)
	require.Equal(t, []string{"patch status", "get", "patch status", "get", "patch status", "get", "patch status"}, a.verbs(),
		"the first try uses the last-known copy, retries GET")
	require.Equal(t, int32(2), repeated.Load(), "hook from the second failed try")
	require.Equal(t, v1.ConditionFalse, findCondition(a.server(t), v1.NodeReady).Status)

	// All five tries fail: an error, and the transition is still reported
	// (with its first transition time) once the server is back.
	flipAt := a.clk.Now().Add(10 * time.Second)
	fails.Store(5)
	a.down.Store(false)
	a.clk.Step(10 * time.Second)
	_, err = a.ctl.Sync(ctx)
	require.ErrorContains(t, err, "exceeds retry count")
	a.clk.Step(10 * time.Second)
	res, err = a.ctl.Sync(ctx)
	require.NoError(t, err)
	require.True(t, res.Ready)
	ready := findCondition(a.server(t), v1.NodeReady)
	require.Equal(t, v1.ConditionTrue, ready.Status)
	require.Equal(t, flipAt.Unix(), ready.LastTransitionTime.Unix())
	nReady := 0
	for _, e := range a.events {
		if e.reason == "NodeReady" {
			nReady++
		}
	}
	require.Equal(t, 1, nReady, "one event per flip, however many retries")
}

func TestReRegisterAfterDeletion(t *testing.T) {
	var registered []types.UID
	a := newAgent(t, func(c *Config) { c.OnRegistered = func(n *v1.Node) { registered = append(registered, n.UID) } })
	creates := 0
	a.cs.PrependReactor("create", "nodes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		creates++
		action.(k8stesting.CreateAction).GetObject().(*v1.Node).UID = types.UID(fmt.Sprint("uid-", creates))
		return false, nil, nil
	})
	ctx := context.Background()
	_, err := a.ctl.Sync(ctx)
	require.NoError(t, err)
	a.clk.Step(10 * time.Second)
	_, err = a.ctl.Sync(ctx)
	require.NoError(t, err)
	require.Equal(t, []types.UID{"uid-1"}, registered, "OnRegistered hears of the new Node once")
	require.NoError(t, a.cs.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}))
	a.pressure.Store(true) // something to report
	a.clk.Step(10 * time.Second)
	_, err = a.ctl.Sync(ctx)
	require.True(t, apierrors.IsNotFound(errors.Unwrap(err)) || apierrors.IsNotFound(err), "%v", err)
	a.verbs()
	res, err := a.ctl.Sync(ctx)
	require.NoError(t, err)
	require.True(t, res.Registered)
	require.Equal(t, []string{"create"}, a.verbs())
	require.Equal(t, v1.ConditionTrue, findCondition(a.server(t), v1.NodeMemoryPressure).Status)
	require.Equal(t, []types.UID{"uid-1", "uid-2"}, registered, "and again for the recreated Node")
}

type listerFunc func(string) (*v1.Node, error)

func (f listerFunc) Get(name string) (*v1.Node, error) { return f(name) }

func TestListerReadAndNoRegistration(t *testing.T) {
	seed := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	var reads atomic.Int32
	var a *agent
	a = newAgent(t, func(c *Config) {
		c.DisableRegistration = true
		c.Lister = listerFunc(func(name string) (*v1.Node, error) {
			reads.Add(1)
			return a.server(t), nil
		})
	}, seed)
	ctx := context.Background()
	res, err := a.ctl.Sync(ctx)
	require.NoError(t, err)
	require.True(t, res.Patched)
	require.Equal(t, []string{"patch status"}, a.verbs(), "no create, no GET: the lister is read")
	require.Equal(t, int32(1), reads.Load())
	a.clk.Step(10 * time.Second)
	res, err = a.ctl.Sync(ctx)
	require.NoError(t, err)
	require.False(t, res.Patched)
	require.Empty(t, a.verbs())
}

func TestRunFastReadyAndClean(t *testing.T) {
	defer goleak.VerifyNone(t)
	a := newAgent(t, nil)
	a.down.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.ctl.Run(ctx) }()
	require.Eventually(t, func() bool { return a.ctl.nextOK() && a.ctl.Node() != nil }, 5*time.Second, time.Millisecond)
	require.False(t, isReady(a.server(t)))

	// The runtime comes up: Ready is reported within one fast interval.
	a.down.Store(false)
	a.verbs()
	a.clk.Step(DefaultFastUpdateInterval)
	require.Eventually(t, func() bool { return isReady(a.server(t)) }, 5*time.Second, time.Millisecond)

	// Back on the 10s period: 100ms steps do nothing; Trigger syncs at once.
	require.Eventually(t, func() bool { return a.ctl.nextOK() }, 5*time.Second, time.Millisecond)
	next, _ := a.ctl.NextWake()
	require.Equal(t, a.clk.Now().Add(DefaultUpdateFrequency), next)
	a.verbs()
	a.clk.Step(DefaultFastUpdateInterval)
	a.pressure.Store(true)
	a.ctl.Trigger()
	require.False(t, a.ctl.nextOK(), "a trigger not yet taken means Run is not waiting")
	require.Eventually(t, func() bool {
		c := findCondition(a.server(t), v1.NodeMemoryPressure)
		return c != nil && c.Status == v1.ConditionTrue
	}, 5*time.Second, time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
}

func TestRunRegistrationBackoff(t *testing.T) {
	defer goleak.VerifyNone(t)
	a := newAgent(t, nil)
	var creates atomic.Int32
	a.cs.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if creates.Add(1) <= 3 {
			return true, nil, apierrors.NewInternalError(errors.New("apiserver starting"))
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.ctl.Run(ctx) }()
	for i, d := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		want := int32(i + 1)
		require.Eventually(t, func() bool { return creates.Load() == want && a.ctl.nextOK() }, 5*time.Second, time.Millisecond)
		a.clk.Step(d - time.Millisecond)
		require.Equal(t, want, creates.Load(), "no attempt before the backoff")
		a.clk.Step(time.Millisecond)
	}
	require.Eventually(t, func() bool { return a.ctl.Node() != nil }, 5*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}

func TestReportJitterConvention(t *testing.T) {
	mk := func(jitter float64, r float64) *Controller {
		c, err := New(Config{Client: clientset.Wrap(fake.NewClientset()), NodeName: "n1", ReportJitter: jitter,
			Rand: func() float64 { return r }})
		require.NoError(t, err)
		return c
	}
	require.Equal(t, -DefaultReportFrequency/2, mk(0, 0).reportJitter(), "default ±50%: Rand 0 is the window's start")
	require.Equal(t, time.Duration(0), mk(0, 0.5).reportJitter())
	require.Equal(t, time.Duration(0), mk(-1, 0).reportJitter(), "negative disables jitter whatever Rand says")
	require.Equal(t, time.Duration(0), mk(-1, 0.99).reportJitter())
	require.Equal(t, -DefaultReportFrequency/10, mk(0.1, 0).reportJitter())
	_, err := New(Config{Client: clientset.Wrap(fake.NewClientset()), NodeName: "n1", ReportJitter: 1})
	require.ErrorIs(t, err, ErrInvalidConfig)
}

func (c *Controller) nextOK() bool { _, ok := c.NextWake(); return ok }

// A failing API server during the start-up fast path is not asked ten times
// a second: a failed update waits for the regular period, and once the node
// was reported Ready the fast path is over for good (upstream: once).
func TestRunFastPathBacksOffOnFailure(t *testing.T) {
	defer goleak.VerifyNone(t)
	a := newAgent(t, nil)
	a.down.Store(true) // runtime down: registered, not Ready
	var failing atomic.Bool
	a.cs.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failing.Load() {
			return true, nil, apierrors.NewServiceUnavailable("etcd down")
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.ctl.Run(ctx) }()
	parked := func() time.Duration {
		t.Helper()
		var next time.Time
		require.Eventually(t, func() bool {
			n, ok := a.ctl.NextWake()
			next = n
			return ok && n.After(a.clk.Now())
		}, 5*time.Second, time.Millisecond)
		return next.Sub(a.clk.Now())
	}
	require.Equal(t, DefaultFastUpdateInterval, parked(), "not Ready yet: the fast path")
	a.pressure.Store(true) // a change, so the next pass patches
	failing.Store(true)
	a.clk.Step(DefaultFastUpdateInterval)
	require.Equal(t, DefaultUpdateFrequency, parked(), "a failed update waits the regular period")
	failing.Store(false)
	a.down.Store(false)
	a.clk.Step(DefaultUpdateFrequency)
	require.Eventually(t, func() bool { return isReady(a.server(t)) }, 5*time.Second, time.Millisecond)
	require.Equal(t, DefaultUpdateFrequency, parked())
	a.down.Store(true) // NotReady again: no fast path any more
	a.clk.Step(DefaultUpdateFrequency)
	require.Equal(t, DefaultUpdateFrequency, parked(), "the fast path ran once")
	cancel()
	require.NoError(t, <-done)
}
