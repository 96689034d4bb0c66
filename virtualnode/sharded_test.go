package virtualnode

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeclient"
	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/virtualnode/simulated"
)

// casLeases makes the fake clientset's Lease writes compare-and-swap on
// resourceVersion, as the API server's are.
func casLeases(cs *fake.Clientset) {
	var mu sync.Mutex
	rv := 0
	gvr := coordinationv1.SchemeGroupVersion.WithResource("leases")
	stamp := func(l *coordinationv1.Lease) {
		rv++
		l.ResourceVersion = strconv.Itoa(rv)
	}
	cs.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		stamp(a.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease))
		return false, nil, nil
	})
	cs.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		cur, err := cs.Tracker().Get(gvr, l.Namespace, l.Name)
		if err == nil && cur.(*coordinationv1.Lease).ResourceVersion != l.ResourceVersion {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), l.Name, errors.New("the object has been modified"))
		}
		stamp(l)
		return false, nil, nil
	})
}

// faultyLeases is a client whose shard-Lease updates go through update
// once cut is set (the fake clientset serializes its reactors: a hang
// there would stop every replica).
type faultyLeases struct {
	kubeclient.Interface
	cut    *atomic.Bool
	update func(ctx context.Context, l *coordinationv1.Lease, next kubeclient.LeaseInterface) (*coordinationv1.Lease, error)
}

func (f faultyLeases) Leases(ns string) kubeclient.LeaseInterface {
	next := f.Interface.Leases(ns)
	if ns != DefaultShardNamespace {
		return next
	}
	return faultyLeaseClient{LeaseInterface: next, f: f}
}

type faultyLeaseClient struct {
	kubeclient.LeaseInterface
	f faultyLeases
}

func (c faultyLeaseClient) Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if !c.f.cut.Load() {
		return c.LeaseInterface.Update(ctx, l, opts)
	}
	return c.f.update(ctx, l, c.LeaseInterface)
}

func TestOwnershipRules(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	casLeases(cs)
	clk := clocktesting.NewFakeClock(t0)
	a, b := testOwnership(clientset.Wrap(cs), clk, "a"), testOwnership(clientset.Wrap(cs), clk, "b")
	held, err := a.tryAcquire(ctx)
	require.NoError(t, err)
	require.True(t, held, "created")
	held, err = b.tryAcquire(ctx)
	require.NoError(t, err)
	require.False(t, held, "a holds it")

	// a renews every 2s: b never sees it expire.
	for range 20 {
		clk.Step(2 * time.Second)
		r := a.renew(ctx, a.record)
		require.NoError(t, r.err)
		a.renewed(r)
		held, err = b.tryAcquire(ctx)
		require.NoError(t, err)
		require.False(t, held)
	}
	// a stops renewing: b takes over only after it saw the record
	// unchanged for a lease duration on its own clock.
	clk.Step(14 * time.Second)
	held, _ = b.tryAcquire(ctx)
	require.False(t, held, "14s unchanged")
	clk.Step(time.Second)
	held, err = b.tryAcquire(ctx)
	require.NoError(t, err)
	require.True(t, held, "15s unchanged")
	l, err := cs.CoordinationV1().Leases("ns").Get(ctx, "shard-0", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "b", *l.Spec.HolderIdentity)
	require.Equal(t, int32(1), *l.Spec.LeaseTransitions)
	require.True(t, l.Spec.AcquireTime.Time.Equal(clk.Now()))

	// a's stale renewal is refused (the resourceVersion moved on, and the
	// current record is b's).
	require.ErrorContains(t, a.renew(ctx, a.record).err, `held by "b" now`)
	// b releases: a takes it at once.
	require.NoError(t, b.release(ctx))
	held, err = a.tryAcquire(ctx)
	require.NoError(t, err)
	require.True(t, held, "released")
}

// shardFault is what happens to replica a's shard-Lease updates once the
// test cuts it off, and the scenario's extra steps after the cut.
type shardFault struct {
	// update answers a's update of l, given the server (next), the fake
	// clock and release (closed when the test ends).
	update func(ctx context.Context, l *coordinationv1.Lease, next kubeclient.LeaseInterface, clk *clocktesting.FakeClock, release <-chan struct{}) (*coordinationv1.Lease, error)
	// afterCut runs once, right after the cut.
	afterCut func(t *testing.T, clk *clocktesting.FakeClock, a *Sharded)
	// slack is how much later than the cut a's last renewal may commit
	// or b may see it (a clock leap skips b's looks): b takes over that
	// much later.
	slack time.Duration
}

// TestShardedTakeover: replica a runs both shards; b waits; a is cut off
// from the API's Leases in one of several ways: it stops its shards within
// the renew deadline, and b takes them over after they expired, running the
// same pods on. At no step of the fake clock do both run a shard.
func TestShardedTakeover(t *testing.T) {
	partitioned := errors.New("replica a is partitioned")
	hang := func(_ context.Context, _ *coordinationv1.Lease, _ kubeclient.LeaseInterface, _ *clocktesting.FakeClock, release <-chan struct{}) (*coordinationv1.Lease, error) {
		<-release // as a client without a timeout: ctx is not looked at
		return nil, partitioned
	}
	for name, f := range map[string]shardFault{
		"refused": {update: func(context.Context, *coordinationv1.Lease, kubeclient.LeaseInterface, *clocktesting.FakeClock, <-chan struct{}) (*coordinationv1.Lease, error) {
			return nil, partitioned
		}},
		"hung": {update: hang},
		// The first update after the cut commits at once and answers 8 s
		// late, whatever its context says; the rest fail. The holder
		// counts from the request.
		"answered late": {slack: DefaultShardPeriod, update: func() func(context.Context, *coordinationv1.Lease, kubeclient.LeaseInterface, *clocktesting.FakeClock, <-chan struct{}) (*coordinationv1.Lease, error) {
			var once atomic.Bool
			return func(ctx context.Context, l *coordinationv1.Lease, next kubeclient.LeaseInterface, clk *clocktesting.FakeClock, release <-chan struct{}) (*coordinationv1.Lease, error) {
				if once.Swap(true) {
					return nil, partitioned
				}
				sent := clk.Now()
				out, err := next.Update(context.WithoutCancel(ctx), l, metav1.UpdateOptions{})
				for clk.Since(sent) < 8*time.Second {
					select {
					case <-release:
						return out, err
					case <-time.After(time.Millisecond):
					}
				}
				return out, err
			}
		}()},
		// The clock leaps past a's renew deadline while its renewal hangs:
		// a stops at that instant, before the clock moves on.
		"hung, clock leap": {update: hang, slack: DefaultShardDeadline + time.Second, afterCut: func(t *testing.T, clk *clocktesting.FakeClock, a *Sharded) {
			clk.Step(DefaultShardDeadline + time.Second)
			require.Eventually(t, func() bool { return len(a.Leading()) == 0 }, 20*time.Second, time.Millisecond,
				"a stops at its renew deadline, fake time standing still")
		}},
	} {
		t.Run(name, func(t *testing.T) { testShardedTakeover(t, f) })
	}
}

func testShardedTakeover(t *testing.T, fault shardFault) {
	defer goleak.VerifyNone(t)
	cs := fake.NewClientset()
	casLeases(cs)
	clk := clocktesting.NewFakeClock(t0)
	var cut atomic.Bool
	release := make(chan struct{})
	unblock := sync.OnceFunc(func() { close(release) })
	defer unblock()
	faulty := faultyLeases{Interface: clientset.Wrap(cs), cut: &cut,
		update: func(ctx context.Context, l *coordinationv1.Lease, next kubeclient.LeaseInterface) (*coordinationv1.Lease, error) {
			return fault.update(ctx, l, next, clk, release)
		}}
	nodes := []string{"vn-0", "vn-1", "vn-2", "vn-3", "vn-4", "vn-5"}
	// One registry per replica: its shards' metrics, labelled by shard,
	// come and go with the shards.
	regs := map[string]*prometheus.Registry{"a": prometheus.NewRegistry(), "b": prometheus.NewRegistry()}
	shardsIn := func(reg *prometheus.Registry) []string {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		var out []string
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "shard" && !slices.Contains(out, l.GetValue()) {
						out = append(out, l.GetValue())
					}
				}
			}
		}
		slices.Sort(out)
		return out
	}
	replica := func(id string, cidr string) (*Sharded, *simulated.Provider) {
		sim, err := simulated.New(simulated.Config{Clock: clk, PodCIDR: netip.MustParsePrefix(cidr)})
		require.NoError(t, err)
		var heartbeat kubeclient.Interface = clientset.Wrap(cs)
		if id == "a" {
			heartbeat = faulty
		}
		s, err := NewSharded(ShardedConfig{Identity: id, Shards: 2,
			Agent: Config{Client: clientset.Wrap(cs), HeartbeatClient: heartbeat, Nodes: nodes, Provider: sim, Clock: clk,
				Registerer: regs[id]}})
		require.NoError(t, err)
		return s, sim
	}
	a, simA := replica("a", "10.1.0.0/16")
	defer simA.Close()
	b, simB := replica("b", "10.2.0.0/16")
	defer simB.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := func(s *Sharded) chan error {
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		return done
	}
	doneA := run(a)
	// Poll in real time, stepping the fake clock a quarter second between
	// looks. After a step, wait (a while at most) until the goroutines whose
	// timers fired have armed their next ones: on a loaded machine fake time
	// would otherwise run ahead of a replica still busy with its last round,
	// and the replica would look slower than it is.
	step := func() {
		armed := clk.Waiters()
		clk.Step(250 * time.Millisecond)
		for deadline := time.Now().Add(3 * time.Second); clk.Waiters() < armed && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	advanceUntil := func(msg string, cond func() bool, check func()) {
		t.Helper()
		require.Eventually(t, func() bool {
			check()
			if cond() {
				return true
			}
			step()
			return false
		}, 60*time.Second, 10*time.Millisecond, msg)
	}
	noOverlap := func() {
		for _, i := range a.Leading() {
			require.NotContains(t, b.Leading(), i, "shard %d run by both replicas", i)
		}
	}
	advanceUntil("a takes both shards", func() bool { return slices.Equal(a.Leading(), []int{0, 1}) }, func() {})
	advanceUntil("both shards' metrics on a's registry", func() bool { return slices.Equal(shardsIn(regs["a"]), []string{"0", "1"}) }, func() {})
	pod := testPod(v1.RestartPolicyAlways, nil)
	pod.Spec.NodeName = "vn-3"
	_, err := cs.CoreV1().Pods("ns").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	advanceUntil("the pod runs on a", func() bool {
		p, err := cs.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning
	}, func() {})
	require.Equal(t, 1, simA.Len())
	before, err := cs.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
	require.NoError(t, err)

	doneB := run(b)
	start := clk.Now()
	advanceUntil("b waits while a renews", func() bool { return clk.Since(start) > 30*time.Second }, func() {
		require.Empty(t, b.Leading())
	})

	cut.Store(true)
	cutAt := clk.Now()
	if fault.afterCut != nil {
		fault.afterCut(t, clk, a)
	}
	var aStopped time.Time
	advanceUntil("b takes both shards", func() bool { return slices.Equal(b.Leading(), []int{0, 1}) }, func() {
		noOverlap()
		if aStopped.IsZero() && len(a.Leading()) == 0 {
			aStopped = clk.Now()
		}
	})
	noOverlap()
	took := clk.Since(cutAt)
	t.Logf("a stopped %v, b took over %v after the cut", aStopped.Sub(cutAt), took)
	require.False(t, aStopped.IsZero())
	require.LessOrEqual(t, aStopped.Sub(cutAt), DefaultShardDeadline+DefaultShardPeriod+3*time.Second, "a stops within its renew deadline (and the time its agents take to stop)")
	// Liveness, loosely: b looks every retry period, and on a loaded
	// machine fake time runs ahead of the replicas (by seconds under the
	// race detector beside a build). Safety is noOverlap, at every step.
	require.LessOrEqual(t, took, fault.slack+2*DefaultShardDuration, "b takes over within about a lease duration")
	advanceUntil("b runs the pod on", func() bool { return simB.Len() == 1 }, noOverlap)
	resync := clk.Now()
	advanceUntil("b resyncs the pod", func() bool { return clk.Since(resync) > 5*time.Second }, noOverlap)
	after, err := cs.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, v1.PodRunning, after.Status.Phase)
	require.Equal(t, before.Status.PodIP, after.Status.PodIP, "adopted, not restarted")
	require.Empty(t, shardsIn(regs["a"]), "a's shard metrics left with its shards")
	advanceUntil("both shards' metrics on b's registry", func() bool { return slices.Equal(shardsIn(regs["b"]), []string{"0", "1"}) }, noOverlap)
	require.True(t, before.Status.StartTime.Equal(after.Status.StartTime))

	cancel()
	unblock()
	for _, done := range []chan error{doneA, doneB} {
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return")
		}
	}
}

func TestShardedConfig(t *testing.T) {
	cs := fake.NewClientset()
	sim, err := simulated.New(simulated.Config{})
	require.NoError(t, err)
	agent := Config{Client: clientset.Wrap(cs), Nodes: []string{"a", "b", "c"}, Provider: sim}
	for name, cfg := range map[string]ShardedConfig{
		"no identity": {Agent: agent},
		"deadline":    {Agent: agent, Identity: "x", RenewDeadline: 20 * time.Second},
		"no nodes":    {Agent: Config{Client: clientset.Wrap(cs), Provider: sim}, Identity: "x"},
		"listener":    {Agent: Config{Client: clientset.Wrap(cs), Nodes: []string{"a"}, Provider: sim, API: &APIConfig{Listener: &lazyListener{}}}, Identity: "x"},
		"negative":    {Agent: agent, Identity: "x", Shards: -1},
		// Refused at once, not when a shard is taken.
		"open API": {Agent: Config{Client: clientset.Wrap(cs), Nodes: []string{"a"}, Provider: sim,
			API: &APIConfig{Addr: "0.0.0.0:10250", Anonymous: true, AuthorizationMode: AuthorizationAlwaysAllow}}, Identity: "x"},
		"short period": {Agent: agent, Identity: "x", LeaseDuration: 500 * time.Millisecond},
		// The Lease says 10 s: the others wait 10 s, not 10.5.
		"whole seconds": {Agent: agent, Identity: "x", LeaseDuration: 10500 * time.Millisecond, RenewDeadline: 10200 * time.Millisecond, RetryPeriod: time.Second},
	} {
		_, err := NewSharded(cfg)
		require.ErrorIs(t, err, ErrInvalidConfig, name)
	}
	s, err := NewSharded(ShardedConfig{Agent: agent, Identity: "x"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, s.Run(ctx))
	require.ErrorIs(t, s.Run(ctx), ErrAlreadyRunning)
	require.Len(t, s.shards, 3, "at most one shard per node")
	for i, nodes := range s.shards {
		for _, n := range nodes {
			require.Equal(t, i, ShardOf(n, 3), "a stable hash")
		}
	}
}

// testOwnership is replica id's claim on Lease ns/shard-0 (15 s).
func testOwnership(client kubeclient.LeasesGetter, clk *clocktesting.FakeClock, id string) *ownership {
	return &ownership{client: client, namespace: "ns", name: "shard-0", identity: id, duration: 15 * time.Second, clock: clk}
}

// mustAcquire takes o's Lease, which must be free.
func mustAcquire(t *testing.T, o *ownership) {
	t.Helper()
	held, err := o.tryAcquire(context.Background())
	require.NoError(t, err)
	require.True(t, held)
}

// slowGets runs before on each Lease Get, as if the answer took that long
// (before may step the clock and write).
type slowGets struct {
	kubeclient.LeasesGetter
	before func()
}

func (s slowGets) Leases(ns string) kubeclient.LeaseInterface {
	return slowGet{LeaseInterface: s.LeasesGetter.Leases(ns), before: s.before}
}

type slowGet struct {
	kubeclient.LeaseInterface
	before func()
}

func (s slowGet) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	s.before()
	return s.LeaseInterface.Get(ctx, name, opts)
}

// TestOwnershipCountsFromTheAnswer: a read that took 6 s brought a renewal
// made while it was on its way; the Lease duration counts from its answer,
// so the holder (who may act until that renewal + its renew deadline) has
// stopped before b takes over.
func TestOwnershipCountsFromTheAnswer(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	casLeases(cs)
	clk := clocktesting.NewFakeClock(t0)
	a := testOwnership(clientset.Wrap(cs), clk, "a")
	mustAcquire(t, a)
	slow := false
	b := testOwnership(slowGets{LeasesGetter: clientset.Wrap(cs), before: func() {
		if slow {
			clk.Step(6 * time.Second)
			r := a.renew(ctx, a.record)
			require.NoError(t, r.err)
			a.renewed(r)
		}
	}}, clk, "b")
	held, err := b.tryAcquire(ctx)
	require.NoError(t, err)
	require.False(t, held)
	slow = true
	held, err = b.tryAcquire(ctx) // sent at 0 s, answered at 6 s with a's renewal of 6 s
	require.NoError(t, err)
	require.False(t, held)
	slow = false
	clk.Step(9 * time.Second) // 15 s after the read was sent; a may act until 16 s
	held, err = b.tryAcquire(ctx)
	require.NoError(t, err)
	require.False(t, held, "a's renewal is 9 s old as b saw it")
	clk.Step(6 * time.Second)
	held, err = b.tryAcquire(ctx)
	require.NoError(t, err)
	require.True(t, held, "15 s after b saw a's last renewal")
}

// TestRenewalAfterAnotherWrite: a write to the held Lease by someone else
// (a label) does not cost the holder its Lease: the renewal reads the
// current record and renews it.
func TestRenewalAfterAnotherWrite(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	casLeases(cs)
	clk := clocktesting.NewFakeClock(t0)
	a := testOwnership(clientset.Wrap(cs), clk, "a")
	mustAcquire(t, a)
	l, err := cs.CoordinationV1().Leases("ns").Get(ctx, "shard-0", metav1.GetOptions{})
	require.NoError(t, err)
	l.Labels = map[string]string{"team": "x"}
	_, err = cs.CoordinationV1().Leases("ns").Update(ctx, l, metav1.UpdateOptions{})
	require.NoError(t, err)
	clk.Step(2 * time.Second)
	r := a.renew(ctx, a.record)
	require.NoError(t, r.err)
	require.True(t, r.sent.Equal(clk.Now()))
	require.Equal(t, "x", r.lease.Labels["team"])
	require.True(t, r.lease.Spec.RenewTime.Time.Equal(clk.Now()))
}
