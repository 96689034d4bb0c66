// Package compose_test shows the blocks composed on one fake clock: every
// Run loop of lease, nodestatus, pleg, prober, eviction and podworkers is
// driven by stepping a single FakeClock to the earliest time any of them
// waits for, without sleeps and without reaching into the packages.
package compose_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/clockdrive"
	"github.com/nodekit/nodekit/containergc"
	"github.com/nodekit/nodekit/eviction"
	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/lease"
	"github.com/nodekit/nodekit/nodestatus"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/pluginwatch"
	"github.com/nodekit/nodekit/podworkers"
	"github.com/nodekit/nodekit/prober"
	"github.com/nodekit/nodekit/syncloop"
)

// Every block with a Run loop on the injected clock is a clockdrive.Waker.
var (
	_ clockdrive.Waker = (*lease.Controller)(nil)
	_ clockdrive.Waker = (*nodestatus.Controller)(nil)
	_ clockdrive.Waker = (*pleg.Generator)(nil)
	_ clockdrive.Waker = (*prober.Manager)(nil)
	_ clockdrive.Waker = (*eviction.Manager)(nil)
	_ clockdrive.Waker = (*syncloop.Loop)(nil)
	_ clockdrive.Waker = (*syncloop.FileSource)(nil)
	_ clockdrive.Waker = (*syncloop.HTTPSource)(nil)
	_ clockdrive.Waker = (*containergc.Collector)(nil)
	_ clockdrive.Waker = (*pluginwatch.Watcher)(nil)
)

// countingSyncer counts pod syncs and tells whether one is in progress.
type countingSyncer struct {
	syncs  atomic.Int32
	inSync atomic.Int32
}

func (s *countingSyncer) SyncPod(context.Context, podworkers.UpdateType, *v1.Pod, *v1.Pod) (bool, error) {
	s.inSync.Add(1)
	defer s.inSync.Add(-1)
	s.syncs.Add(1)
	return false, nil
}
func (s *countingSyncer) SyncTerminatingPod(context.Context, *v1.Pod, int64, podworkers.StatusFunc) error {
	return nil
}
func (s *countingSyncer) SyncTerminatingRuntimePod(context.Context, *podworkers.RuntimePod) error {
	return nil
}
func (s *countingSyncer) SyncTerminatedPod(context.Context, *v1.Pod) error { return nil }

// host is the smallest Handler over podworkers and prober, mapped as the
// syncloop package documents.
type host struct {
	workers *podworkers.Workers
	probes  *prober.Manager
	pods    sync.Map // types.UID → *v1.Pod
}

func (h *host) update(ctx context.Context, typ podworkers.UpdateType, pods []*v1.Pod) {
	for _, p := range pods {
		h.pods.Store(p.UID, p)
		_ = h.workers.UpdatePod(ctx, podworkers.Update{Type: typ, Pod: p})
	}
}
func (h *host) HandlePodAdditions(ctx context.Context, pods []*v1.Pod) {
	h.update(ctx, podworkers.UpdateCreate, pods)
	for _, p := range pods {
		_ = h.probes.AddPod(p)
	}
}
func (h *host) HandlePodUpdates(ctx context.Context, pods []*v1.Pod) {
	h.update(ctx, podworkers.UpdateUpdate, pods)
}
func (h *host) HandlePodRemoves(ctx context.Context, pods []*v1.Pod) {
	for _, p := range pods {
		h.pods.Delete(p.UID)
		_ = h.workers.UpdatePod(ctx, podworkers.Update{Type: podworkers.UpdateKill, Pod: p})
	}
}
func (h *host) HandlePodReconcile(context.Context, []*v1.Pod) {}
func (h *host) HandlePodSyncs(ctx context.Context, pods []*v1.Pod) {
	h.update(ctx, podworkers.UpdateSync, pods)
}
func (h *host) HandlePodCleanups(ctx context.Context) error {
	desired := sets.New[types.UID]()
	h.pods.Range(func(k, _ any) bool { desired.Insert(k.(types.UID)); return true })
	h.workers.SyncKnownPods(ctx, desired)
	h.probes.CleanupPods(desired)
	return nil
}

// The recipe: start every Run; then repeatedly wait until each block says
// it waits (its Next… accessor is ok) and none waits for the present, and
// step the clock to the earliest time any of them waits for. A block's
// accessor, unlike "the clock has waiters", is not fooled by the request
// timeouts its own work puts on the clock. The PLEG and the prober deliver
// into the sync loop through their Sink: no goroutine of the test's own
// forwards anything.
func TestOneFakeClockDrivesEveryRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testclock.NewFakeClock(start)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const node = "n1"
	cs := fake.NewClientset()
	cs.PrependReactor("create", "nodes", func(action k8stesting.Action) (bool, kruntime.Object, error) {
		action.(k8stesting.CreateAction).GetObject().(*v1.Node).UID = "node-uid"
		return false, nil, nil
	})

	rt := critesting.NewFakeRuntimeService()
	uid := types.UID("pod-uid")
	labels := map[string]string{pleg.PodUIDLabel: string(uid)}
	rt.SetFakeSandboxes([]*critesting.FakePodSandbox{{PodSandboxStatus: runtimeapi.PodSandboxStatus{Id: "sb1",
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: string(uid)},
		State:    runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: start.UnixNano(), Labels: labels}}})
	rt.SetFakeContainers([]*critesting.FakeContainer{{SandboxID: "sb1", ContainerStatus: runtimeapi.ContainerStatus{Id: "c1",
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, State: runtimeapi.ContainerState_CONTAINER_RUNNING,
		CreatedAt: start.UnixNano(), StartedAt: start.UnixNano(), Labels: labels}}})

	// Built in dependency order: the loop first (the PLEG and the prober
	// deliver into it), the generator's health reached through a closure.
	syncer := &countingSyncer{}
	var gen *pleg.Generator
	workers, err := podworkers.New(podworkers.Config{Syncer: syncer,
		StatusBarrier: func(ctx context.Context, uid types.UID, after time.Time) error {
			return gen.Cache().WaitNewerThan(ctx, uid, after)
		}, Clock: clk})
	require.NoError(t, err)
	h := &host{workers: workers}
	loop, err := syncloop.New(syncloop.Config{Handler: h, ExternalSources: []string{kubetypes.APIServerSource},
		RuntimeHealth: func() error { return gen.Healthy() }, PodsToSync: workers.DuePods, Clock: clk})
	require.NoError(t, err)
	gen, err = pleg.New(pleg.Config{Runtime: rt, RuntimeName: "fake", Sink: loop.HandlePLEGEvent, Clock: clk})
	require.NoError(t, err)
	var results atomic.Int32
	probes, err := prober.New(prober.Config{Runner: rt, Clock: clk, Rand: func() float64 { return 0 },
		Sink: func(pt prober.ProbeType, u prober.Update) { results.Add(1); loop.HandleProbeUpdate(pt, u) }})
	require.NoError(t, err)
	h.probes = probes

	leases, err := lease.New(lease.Config{Client: clientset.Wrap(cs), NodeName: node, Clock: clk, RenewJitter: -1})
	require.NoError(t, err)
	ready, err := nodestatus.ReadyCondition(nodestatus.ReadyConfig{RuntimeErrors: gen.Healthy})
	require.NoError(t, err)
	capacity := func(_ context.Context, _ time.Time, n *v1.Node) error {
		n.Status.Capacity = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"),
			v1.ResourcePods: resource.MustParse("110"), v1.ResourceEphemeralStorage: resource.MustParse("10Gi")}
		n.Status.Allocatable = n.Status.Capacity.DeepCopy()
		return nil
	}
	status, err := nodestatus.New(nodestatus.Config{Client: clientset.Wrap(cs), NodeName: node, Clock: clk,
		Setters: []nodestatus.Setter{capacity, ready}, ReportJitter: -1,
		OnRegistered: func(n *v1.Node) { leases.SetNodeUID(n.Name, n.UID) }})
	require.NoError(t, err)
	summary := eviction.SummaryProviderFunc(func(context.Context) (*statsapi.Summary, error) {
		avail, ws := uint64(3<<30), uint64(1<<30)
		return &statsapi.Summary{Node: statsapi.NodeStats{NodeName: node,
			Memory: &statsapi.MemoryStats{Time: metav1.NewTime(clk.Now()), AvailableBytes: &avail, WorkingSetBytes: &ws}}}, nil
	})
	evict, err := eviction.New(eviction.Config{Summary: summary, Clock: clk,
		ActivePods: func() []*v1.Pod { return nil },
		KillPod:    func(context.Context, *v1.Pod, int64, func(*v1.PodStatus)) error { return nil }})
	require.NoError(t, err)

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: uid},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "app", LivenessProbe: &v1.Probe{
			ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 10}}}}}
	loop.Set(ctx, kubetypes.APIServerSource, []*v1.Pod{pod})
	probes.UpdatePodStatus(ctx, pod, &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: "fake://c1",
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(start)}}}}})

	// The host relists once before it starts the loops, so the runtime is
	// healthy (and the node Ready) from the first instant; otherwise the
	// loops' first passes race with the PLEG's first relist.
	_, err = gen.Relist(ctx)
	require.NoError(t, err)

	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{leases.Run, status.Run, gen.Run, probes.Run, workers.Run, loop.Run, evict.Run} {
		wg.Go(func() { assert.NoError(t, run(ctx)) })
	}
	defer wg.Wait()
	defer cancel()

	driver, err := clockdrive.New(clk, map[string]clockdrive.Waker{
		"lease":      leases,
		"nodestatus": status,
		"pleg":       gen,
		"prober":     probes,
		"syncloop":   loop,
		"eviction":   evict,
		"podworkers": clockdrive.Idle(func() int { return int(syncer.inSync.Load()) }),
	})
	require.NoError(t, err)
	safety, stopSafety := context.WithTimeout(ctx, 30*time.Second) // real time: only if a block never parks
	defer stopSafety()
	steps, err := driver.StepUntil(safety, start.Add(time.Minute))
	require.NoError(t, err)

	// One minute of a node: relists and sync ticks every second, a lease
	// renewal, a status sync and an eviction pass every 10s, the probe every
	// 10s from its first run.
	assert.Len(t, steps, 60, "one step per relist period: %v", steps)
	for _, d := range steps {
		assert.Equal(t, time.Second, d)
	}
	at := func(want time.Duration, got time.Time, what string) {
		t.Helper()
		assert.True(t, start.Add(want).Equal(got), "%s: want start+%v, got %v", what, want, got)
	}
	renewal, _ := leases.NextRenewal(node)
	at(70*time.Second, renewal, "lease renewed at 10s … 60s")
	nextSync, _ := status.NextWake()
	at(70*time.Second, nextSync, "node status")
	relist, _ := gen.NextWake()
	at(61*time.Second, relist, "relist")
	probe, _ := probes.NextWake()
	at(70*time.Second, probe, "probe")
	iteration, _ := loop.NextWake()
	at(61*time.Second, iteration, "sync tick")
	pass, _ := evict.NextWake()
	at(70*time.Second, pass, "eviction pass")
	execs := 0
	for _, c := range rt.GetCalls() {
		if c == "ExecSync" {
			execs++
		}
	}
	assert.Equal(t, 7, execs, "probed at 0s, 10s … 60s")
	assert.Equal(t, int32(1), results.Load(), "one liveness result (Success), delivered through the sink")
	assert.GreaterOrEqual(t, syncer.syncs.Load(), int32(1), "the pod synced once the PLEG was fresh")
	l, err := cs.CoordinationV1().Leases("kube-node-lease").Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	at(60*time.Second, l.Spec.RenewTime.Time, "lease renew time")
	require.Len(t, l.OwnerReferences, 1, "the owner reference came from OnRegistered")
	assert.Equal(t, types.UID("node-uid"), l.OwnerReferences[0].UID)
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.ConditionTrue, n.Status.Conditions[len(n.Status.Conditions)-1].Status, "Ready from the PLEG's health")
}
