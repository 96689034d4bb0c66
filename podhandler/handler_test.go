package podhandler

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/admission"
	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/nodestatus/nodestatustest"
	"github.com/nodekit/nodekit/podmanager"
	"github.com/nodekit/nodekit/podstatus/podstatustest"
	"github.com/nodekit/nodekit/podworkers"
	"github.com/nodekit/nodekit/podworkers/podworkerstest"
	"github.com/nodekit/nodekit/syncloop"
	"github.com/nodekit/nodekit/volumes/volumestest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	_ syncloop.Handler = (*Handler)(nil)
	_ Workers          = (*podworkers.Workers)(nil)
	_ PodStore         = (*podmanager.Manager)(nil)
	_ Statuses         = (*podstatustest.Manager)(nil)
	_ OrphanCleaner    = (*volumestest.Volumes)(nil)
	_ NodeGetter       = (*nodestatustest.Node)(nil)
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type harness struct {
	h        *Handler
	workers  *podworkers.Workers
	syncer   *podworkerstest.Syncer
	clk      *clocktesting.FakeClock
	recorder *record.FakeRecorder
	rejected []string
	probes   *fakeProbes
	runtime  *fakeSandboxes
	orphans  *fakeCleaner
	statuses *fakeStatuses
}

func (hs *harness) Reject(_ context.Context, pod *v1.Pod, reason, message string) {
	hs.rejected = append(hs.rejected, pod.Name+": "+reason+": "+message)
}

// newHarness builds a Handler over real Workers with a fake Syncer; the
// test drives the workers with ProcessPending.
func newHarness(t *testing.T, mutate func(*Config)) *harness {
	t.Helper()
	hs := &harness{syncer: &podworkerstest.Syncer{}, clk: clocktesting.NewFakeClock(t0),
		recorder: record.NewFakeRecorder(100), probes: &fakeProbes{}, runtime: &fakeSandboxes{},
		orphans: &fakeCleaner{}, statuses: &fakeStatuses{}}
	w, err := podworkers.New(podworkers.Config{Syncer: hs.syncer, Clock: hs.clk,
		StatusBarrier: func(context.Context, types.UID, time.Time) error { return nil }})
	require.NoError(t, err)
	hs.workers = w
	cfg := Config{Workers: w, Reject: hs, Probes: hs.probes, Statuses: hs.statuses, Runtime: hs.runtime,
		Orphans: []OrphanCleaner{hs.orphans}, Recorder: hs.recorder, Clock: hs.clk}
	if mutate != nil {
		mutate(&cfg)
	}
	hs.h, err = New(cfg)
	require.NoError(t, err)
	return hs
}

func (hs *harness) transcript(ctx context.Context) []string {
	hs.workers.ProcessPending(ctx)
	return podworkerstest.Transcript(hs.syncer.Calls())
}

func apiPod(name string, created int) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(created) * time.Second)),
		Annotations:       map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.APIServerSource}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
}

func staticPod(name, hash string) *v1.Pod {
	p := apiPod(name, 0)
	p.UID = types.UID(hash)
	p.Annotations = map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource,
		kubetypes.ConfigHashAnnotationKey: hash}
	return p
}

type fakeProbes struct {
	mu                sync.Mutex
	added, removed    []string
	cleaned           sets.Set[types.UID]
	failAdd           error
	cleanupsCalledFor int
}

func (f *fakeProbes) AddPod(pod *v1.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.added = append(f.added, pod.Name)
	return f.failAdd
}

func (f *fakeProbes) RemovePod(pod *v1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, pod.Name)
}

func (f *fakeProbes) CleanupPods(desired sets.Set[types.UID]) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleaned = desired
	f.cleanupsCalledFor++
}

type fakeSandboxes struct {
	sandboxes []*runtimeapi.PodSandbox
	removed   []string
	listErr   error
}

func (f *fakeSandboxes) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return f.sandboxes, f.listErr
}

func (f *fakeSandboxes) RemovePodSandbox(_ context.Context, id string) error {
	f.removed = append(f.removed, id)
	return nil
}

type fakeCleaner struct {
	keep func(types.UID) bool
	err  error
}

func (f *fakeCleaner) CleanupOrphans(_ context.Context, keep func(types.UID) bool) error {
	f.keep = keep
	return f.err
}

type fakeStatuses struct{ keep func(types.UID) bool }

func (f *fakeStatuses) RemoveOrphans(keep func(types.UID) bool) { f.keep = keep }

type admitFunc func(ctx context.Context, attrs admission.Attributes) admission.Result

func (f admitFunc) Admit(ctx context.Context, attrs admission.Attributes) admission.Result {
	return f(ctx, attrs)
}

type nodeGetter struct{ node *v1.Node }

func (n *nodeGetter) Node() *v1.Node { return n.node }

type deadlines map[types.UID]bool

func (d deadlines) PastDeadline(pod *v1.Pod) bool { return d[pod.UID] }

func TestNewValidates(t *testing.T) {
	_, err := New(Config{})
	require.ErrorContains(t, err, "Workers is required")
	w, err := podworkers.New(podworkers.Config{Syncer: &podworkerstest.Syncer{},
		StatusBarrier: func(context.Context, types.UID, time.Time) error { return nil }})
	require.NoError(t, err)
	_, err = New(Config{Workers: w, MirrorClient: fake.NewClientset().CoreV1()})
	require.ErrorContains(t, err, "MirrorClient and Node go together")
	h, err := New(Config{Workers: w})
	require.NoError(t, err)
	assert.NotNil(t, h.Pods(), "an empty pod manager by default")
}

func TestAdditionsAdmitOldestFirstBesideTheOthers(t *testing.T) {
	ctx := context.Background()
	var seen []string
	hs := newHarness(t, func(c *Config) {
		c.Admit = admitFunc(func(_ context.Context, a admission.Attributes) admission.Result {
			var others []string
			for _, o := range a.OtherPods {
				others = append(others, o.Name)
			}
			seen = append(seen, a.Pod.Name+"<-"+join(others))
			if a.Pod.Name == "big" {
				return admission.Result{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu"}
			}
			return admission.Result{Admit: true}
		})
	})
	// Given newest first: admitted oldest first, each beside the ones before.
	hs.h.HandlePodAdditions(ctx, []*v1.Pod{apiPod("c", 3), apiPod("big", 2), apiPod("a", 1)})
	assert.Equal(t, []string{"a<-", "big<-a", "c<-a"}, seen, "a rejected pod is not among the others")
	assert.Equal(t, []string{"big: OutOfcpu: Node didn't have enough resource: cpu"}, hs.rejected)
	assert.Equal(t, "Warning OutOfcpu Node didn't have enough resource: cpu", <-hs.recorder.Events)
	assert.Equal(t, []string{"SyncPod create uid-a", "SyncPod create uid-c"}, hs.transcript(ctx), "no worker for a refused pod")
	assert.Equal(t, []string{"a", "c"}, hs.probes.added)
	assert.True(t, hs.h.Pods().Rejected("uid-big"))
	names := map[string]bool{}
	for _, p := range hs.h.ActivePods() {
		names[p.Name] = true
	}
	assert.Equal(t, map[string]bool{"a": true, "c": true}, names)
	_, ok := hs.h.PodByUID("uid-big")
	assert.True(t, ok, "a refused pod stays known (its status is written)")
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

func TestProbeRegistrationFailureIsAnEvent(t *testing.T) {
	ctx := context.Background()
	hs := newHarness(t, nil)
	hs.probes.failAdd = errors.New("bad probe")
	hs.h.HandlePodAdditions(ctx, []*v1.Pod{apiPod("a", 1)})
	assert.Equal(t, "Warning Unhealthy bad probe", <-hs.recorder.Events)
	assert.Equal(t, []string{"SyncPod create uid-a"}, hs.transcript(ctx), "the pod still runs")
}

func TestUpdatesRemovesReconcileAndSyncs(t *testing.T) {
	ctx := context.Background()
	hs := newHarness(t, nil)
	a, gated := apiPod("a", 1), apiPod("gated", 2)
	gated.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/ready"}}
	hs.h.HandlePodAdditions(ctx, []*v1.Pod{a, gated})
	hs.workers.ProcessPending(ctx)

	a2 := a.DeepCopy()
	a2.Labels = map[string]string{"v": "2"}
	hs.h.HandlePodUpdates(ctx, []*v1.Pod{a2})
	got, _ := hs.h.PodByUID(a.UID)
	assert.Equal(t, "2", got.Labels["v"], "the pod manager has the update")

	hs.workers.ProcessPending(ctx)
	hs.h.HandlePodReconcile(ctx, []*v1.Pod{a2, gated}) // only the gated pod is synced
	hs.workers.ProcessPending(ctx)
	hs.h.HandlePodSyncs(ctx, []*v1.Pod{a}) // with the pod as config has it
	hs.workers.ProcessPending(ctx)
	hs.h.HandlePodRemoves(ctx, []*v1.Pod{gated})
	assert.Equal(t, []string{"SyncPod create uid-a", "SyncPod create uid-gated",
		"SyncPod update uid-a", "SyncPod sync uid-gated", "SyncPod sync uid-a",
		"SyncTerminatingPod uid-gated grace=30", "SyncTerminatedPod uid-gated"}, hs.transcript(ctx))
	calls := hs.syncer.Calls()
	assert.Equal(t, "2", calls[4].Pod.Labels["v"], "the sync carries the updated pod, not the one passed")
	assert.Equal(t, []string{"gated"}, hs.probes.removed)
	_, ok := hs.h.PodByUID(gated.UID)
	assert.False(t, ok)
}

func TestMirrorPods(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	node := &nodeGetter{}
	hs := newHarness(t, func(c *Config) { c.MirrorClient, c.Node = client.CoreV1(), node })
	static := staticPod("etcd", "hash-1")

	// Before the Node is registered there is no owner: no mirror yet.
	hs.h.HandlePodAdditions(ctx, []*v1.Pod{static})
	hs.workers.ProcessPending(ctx)
	mirrors, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, mirrors.Items)

	// Housekeeping retries once the Node exists.
	node.node = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}}
	require.NoError(t, hs.h.HandlePodCleanups(ctx))
	m, err := client.CoreV1().Pods("default").Get(ctx, "etcd", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "hash-1", m.Annotations[kubetypes.ConfigMirrorAnnotationKey])
	require.Len(t, m.OwnerReferences, 1)
	assert.Equal(t, types.UID("node-uid"), m.OwnerReferences[0].UID)
	assert.Same(t, hs.h.Pods().MirrorOf(static), hs.h.Pods().MirrorOf(static))
	require.NotNil(t, hs.h.Pods().MirrorOf(static), "the created mirror is recorded")

	// The mirror is given to the worker with the pod.
	hs.h.HandlePodSyncs(ctx, []*v1.Pod{static})
	hs.workers.ProcessPending(ctx)
	calls := hs.syncer.Calls()
	require.NotNil(t, calls[len(calls)-1].MirrorPod)

	// The manifest was removed: the pod is killed, then its mirror goes.
	hs.h.HandlePodRemoves(ctx, []*v1.Pod{static})
	hs.workers.ProcessPending(ctx)
	require.NoError(t, hs.h.HandlePodCleanups(ctx))
	_, err = client.CoreV1().Pods("default").Get(ctx, "etcd", metav1.GetOptions{})
	assert.True(t, isNotFound(err), "orphaned mirror deleted: %v", err)
}

func TestEditedManifestReplacesTheMirror(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	node := &nodeGetter{node: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}}}
	hs := newHarness(t, func(c *Config) { c.MirrorClient, c.Node = client.CoreV1(), node })
	v1pod := staticPod("web", "hash-1")
	hs.h.HandlePodAdditions(ctx, []*v1.Pod{v1pod})
	hs.workers.ProcessPending(ctx)
	old, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	old.UID = "mirror-1"
	hs.h.Pods().SetMirror(old) // as the informer would deliver it

	// The edit: the old version is removed, the new one added.
	v2pod := staticPod("web", "hash-2")
	hs.h.HandlePodRemoves(ctx, []*v1.Pod{v1pod})
	hs.h.HandlePodAdditions(ctx, []*v1.Pod{v2pod})
	hs.workers.ProcessPending(ctx)
	require.NoError(t, hs.h.HandlePodCleanups(ctx))
	m, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "hash-2", m.Annotations[kubetypes.ConfigMirrorAnnotationKey], "the mirror follows the manifest")
}

func isNotFound(err error) bool {
	var s interface{ Status() metav1.Status }
	return errors.As(err, &s) && s.Status().Reason == metav1.StatusReasonNotFound
}

func TestCleanupsKillOrphansAndRemoveDeadSandboxes(t *testing.T) {
	ctx := context.Background()
	hs := newHarness(t, nil)
	a := apiPod("a", 1)
	hs.h.HandlePodAdditions(ctx, []*v1.Pod{a})
	hs.workers.ProcessPending(ctx)
	sb := func(id, uid string, state runtimeapi.PodSandboxState) *runtimeapi.PodSandbox {
		return &runtimeapi.PodSandbox{Id: id, State: state, Metadata: &runtimeapi.PodSandboxMetadata{Name: id, Namespace: "default", Uid: uid}}
	}
	hs.runtime.sandboxes = []*runtimeapi.PodSandbox{
		sb("mine", "uid-a", runtimeapi.PodSandboxState_SANDBOX_READY),
		sb("orphan", "uid-orphan", runtimeapi.PodSandboxState_SANDBOX_READY),
		sb("dead", "uid-deleted", runtimeapi.PodSandboxState_SANDBOX_NOTREADY),
	}
	require.NoError(t, hs.h.HandlePodCleanups(ctx))
	assert.Equal(t, []string{"dead"}, hs.runtime.removed, "a deleted pod's dead sandbox goes")
	calls := hs.transcript(ctx)
	assert.Contains(t, calls, "SyncTerminatingRuntimePod uid-orphan", "a pod running without config is killed")
	assert.Equal(t, 1, hs.probes.cleanupsCalledFor)
	assert.True(t, hs.probes.cleaned.Has("uid-a"))

	// Keep: desired, known to the workers, or still in the runtime.
	keep := hs.orphans.keep
	require.NotNil(t, keep)
	assert.True(t, keep("uid-a"))
	assert.True(t, keep("uid-orphan"), "the runtime still holds it")
	assert.False(t, keep("uid-gone"))
	assert.True(t, hs.statuses.keep("uid-a"))
	assert.False(t, hs.statuses.keep("uid-gone"))

	// A runtime that cannot list fails housekeeping, and nothing is
	// removed on a guess.
	hs.runtime.listErr = errors.New("runtime down")
	hs.orphans.keep = nil
	require.ErrorContains(t, hs.h.HandlePodCleanups(ctx), "runtime down")
	assert.Nil(t, hs.orphans.keep)
}

func TestCleanupsRestartAFinishedWorkerConfigStillWants(t *testing.T) {
	ctx := context.Background()
	hs := newHarness(t, nil)
	a := apiPod("a", 1)
	hs.syncer.SetTerminal(a.UID, true) // it ran to completion...
	hs.h.HandlePodAdditions(ctx, []*v1.Pod{a})
	hs.workers.ProcessPending(ctx)
	require.True(t, hs.workers.ShouldPodBeFinished(a.UID))
	// ...and housekeeping forgets the finished worker but config still
	// has the pod: a worker is made again (it reports the final status).
	require.NoError(t, hs.h.HandlePodCleanups(ctx))
	require.NoError(t, hs.h.HandlePodCleanups(ctx))
	calls := hs.transcript(ctx)
	assert.Equal(t, "SyncPod create uid-a", calls[0])
	assert.GreaterOrEqual(t, count(calls, "SyncPod create uid-a"), 1)
}

func count(s []string, x string) int {
	n := 0
	for _, v := range s {
		if v == x {
			n++
		}
	}
	return n
}

func TestPodsToSyncAddsPodsPastTheirDeadline(t *testing.T) {
	ctx := context.Background()
	d := deadlines{}
	hs := newHarness(t, func(c *Config) { c.Deadlines = d })
	a, b := apiPod("a", 1), apiPod("b", 2)
	secs := int64(10)
	a.Spec.ActiveDeadlineSeconds, b.Spec.ActiveDeadlineSeconds = &secs, &secs
	hs.h.HandlePodAdditions(ctx, []*v1.Pod{a, b})
	hs.workers.ProcessPending(ctx)
	assert.Empty(t, hs.h.PodsToSync(), "nothing due right after a sync")
	d[b.UID] = true
	assert.Equal(t, []types.UID{b.UID}, hs.h.PodsToSync())
	hs.clk.Step(2 * time.Minute) // the resync period passed for both
	assert.ElementsMatch(t, []types.UID{a.UID, b.UID}, hs.h.PodsToSync(), "each once")
}
