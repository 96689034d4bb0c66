package hosts_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/podworkers"
	"github.com/nodekit/nodekit/syncloop"
)

// syncCall is one Syncer call as the provider saw it.
type syncCall struct {
	method string
	uid    types.UID
	update podworkers.UpdateType
	grace  int64
	at     time.Duration
}

func (c syncCall) String() string {
	switch c.method {
	case "SyncPod":
		return fmt.Sprintf("%v SyncPod %v", c.at, c.update)
	case "SyncTerminatingPod":
		return fmt.Sprintf("%v SyncTerminatingPod grace=%d", c.at, c.grace)
	}
	return fmt.Sprintf("%v %s", c.at, c.method)
}

// provider is the podworkers.Syncer: it "runs" pods by creating sandboxes
// and containers in the CRI runtime, reading runtime state from the PLEG
// cache (made fresh by the workers' status barrier).
type provider struct {
	rt      *critesting.FakeRuntimeService
	cache   *pleg.Cache
	gen     *pleg.Generator // set once built, before anything runs
	barrier *barrier
	clk     *clocktesting.FakeClock

	mu    sync.Mutex
	calls []syncCall
	errs  []error
}

var _ podworkers.Syncer = (*provider)(nil)

// record records a call; the func it returns ends it.
func (p *provider) record(method string, uid types.UID, ut podworkers.UpdateType, grace int64) func(*error) {
	p.barrier.passed(uid)
	p.mu.Lock()
	p.calls = append(p.calls, syncCall{method, uid, ut, grace, p.clk.Now().Sub(t0)})
	p.mu.Unlock()
	return func(err *error) {
		// Ask the PLEG to look at the pod now rather than at the next period.
		p.gen.RequestRelist(uid)
		if *err != nil {
			p.mu.Lock()
			p.errs = append(p.errs, fmt.Errorf("%s %s: %w", method, uid, *err))
			p.mu.Unlock()
		}
	}
}

func transcript(calls []syncCall) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.String())
	}
	return out
}

func (p *provider) history(uid types.UID) []syncCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []syncCall
	for _, c := range p.calls {
		if c.uid == uid {
			out = append(out, c)
		}
	}
	return out
}

// barrier is the workers' StatusBarrier: the PLEG cache's WaitNewerThan,
// watched for the one case Workers.Active leaves to the host: a sync the
// cache has released (or a kill has cancelled) is not counted until its
// goroutine runs again. A pod stays listed from its barrier call to its
// next Syncer call, and the clock must not move while a listed pod is free
// to go on.
type barrier struct {
	cache   *pleg.Cache
	mu      sync.Mutex
	waiting map[types.UID]waiter
	// caught counts the polls at which Active was 0 but a listed pod was
	// free to go on: the steps this watch prevented.
	caught int
}

type waiter struct {
	ctx   context.Context
	after time.Time
}

func (b *barrier) wait(ctx context.Context, uid types.UID, after time.Time) error {
	b.mu.Lock()
	b.waiting[uid] = waiter{ctx, after}
	b.mu.Unlock()
	return b.cache.WaitNewerThan(ctx, uid, after)
}

// passed records that uid's worker reached the Syncer.
func (b *barrier) passed(uid types.UID) {
	b.mu.Lock()
	delete(b.waiting, uid)
	b.mu.Unlock()
}

// released reports whether a listed pod may go on: its wait was cancelled,
// or the cache holds status newer than the pod asked for (the pod's own, or
// the global timestamp).
func (b *barrier) released() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	global := b.cache.Timestamp()
	for uid, w := range b.waiting {
		st, _ := b.cache.Get(uid)
		if w.ctx.Err() != nil || global.After(w.after) || st.Timestamp.After(w.after) {
			b.caught++
			return true
		}
	}
	return false
}

func (b *barrier) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for uid, w := range b.waiting {
		out = append(out, fmt.Sprintf("%s after %v (ctx %v)", uid, w.after.Sub(t0), w.ctx.Err()))
	}
	return fmt.Sprint(out)
}

func podLabels(uid types.UID) map[string]string {
	return map[string]string{pleg.PodUIDLabel: string(uid)}
}

func (p *provider) SyncPod(ctx context.Context, ut podworkers.UpdateType, pod, _ *v1.Pod) (terminal bool, err error) {
	defer p.record("SyncPod", pod.UID, ut, 0)(&err)
	status, err := p.cache.Get(pod.UID)
	if err != nil {
		return false, err
	}
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: uint32(len(status.SandboxStatuses))},
		Labels:   podLabels(pod.UID),
	}
	var sandboxID string
	for _, sb := range status.SandboxStatuses { // newest first
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			sandboxID = sb.Id
			sbCfg.Metadata = sb.Metadata
			break
		}
	}
	if sandboxID == "" {
		if sandboxID, err = p.rt.RunPodSandbox(ctx, sbCfg, ""); err != nil {
			return false, err
		}
	}
	exited := 0
	for _, c := range pod.Spec.Containers {
		var latest *runtimeapi.ContainerStatus
		attempts := 0
		for _, cs := range status.ContainerStatuses { // newest first
			if cs.Metadata.Name == c.Name {
				if latest == nil {
					latest = cs
				}
				attempts++
			}
		}
		if latest != nil && latest.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			continue // running (or being created)
		}
		if latest != nil {
			exited++
			if pod.Spec.RestartPolicy == v1.RestartPolicyNever ||
				(pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure && latest.ExitCode == 0) {
				continue
			}
		}
		id, err := p.rt.CreateContainer(ctx, sandboxID, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(attempts)},
			Image:    &runtimeapi.ImageSpec{Image: c.Image},
			Labels:   podLabels(pod.UID),
		}, sbCfg)
		if err != nil {
			return false, err
		}
		if err := p.rt.StartContainer(ctx, id); err != nil {
			return false, err
		}
	}
	return pod.Spec.RestartPolicy == v1.RestartPolicyNever && exited == len(pod.Spec.Containers), nil
}

// stop stops every container and sandbox of uid the cache knows.
func (p *provider) stop(ctx context.Context, uid types.UID, grace int64) error {
	status, err := p.cache.Get(uid)
	if err != nil {
		return err
	}
	for _, cs := range status.ContainerStatuses {
		if cs.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			if err := p.rt.StopContainer(ctx, cs.Id, grace); err != nil {
				return err
			}
		}
	}
	for _, sb := range status.SandboxStatuses {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			if err := p.rt.StopPodSandbox(ctx, sb.Id); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *provider) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, grace int64, statusFn podworkers.StatusFunc) (err error) {
	defer p.record("SyncTerminatingPod", pod.UID, 0, grace)(&err)
	return p.stop(ctx, pod.UID, grace)
}

func (p *provider) SyncTerminatingRuntimePod(ctx context.Context, pod *podworkers.RuntimePod) (err error) {
	defer p.record("SyncTerminatingRuntimePod", pod.UID, 0, 0)(&err)
	return p.stop(ctx, pod.UID, 0)
}

// SyncTerminatedPod removes what is left of the pod in the runtime.
func (p *provider) SyncTerminatedPod(ctx context.Context, pod *v1.Pod) (err error) {
	defer p.record("SyncTerminatedPod", pod.UID, 0, 0)(&err)
	status, err := p.cache.Get(pod.UID)
	if err != nil {
		return err
	}
	for _, cs := range status.ContainerStatuses {
		if err := p.rt.RemoveContainer(ctx, cs.Id); err != nil {
			return err
		}
	}
	for _, sb := range status.SandboxStatuses {
		if err := p.rt.RemovePodSandbox(ctx, sb.Id); err != nil {
			return err
		}
	}
	return nil
}

// handler is the syncloop.Handler, mapped onto podworkers as the syncloop
// package doc describes (no mirror pods, no admission here). The loop's own
// index is the pod manager: it resolves the pods of syncs, and Loop.Pods
// are the desired pods.
type handler struct {
	workers *podworkers.Workers
	loop    *syncloop.Loop // set once built, before anything runs
	cache   *pleg.Cache

	mu   sync.Mutex
	errs []error
}

var _ syncloop.Handler = (*handler)(nil)

func (h *handler) update(ctx context.Context, ut podworkers.UpdateType, pods []*v1.Pod) {
	for _, p := range pods {
		h.send(ctx, podworkers.Update{Type: ut, Pod: p})
	}
}

func (h *handler) send(ctx context.Context, u podworkers.Update) {
	if err := h.workers.UpdatePod(ctx, u); err != nil {
		h.mu.Lock()
		h.errs = append(h.errs, err)
		h.mu.Unlock()
	}
}

func (h *handler) HandlePodAdditions(ctx context.Context, pods []*v1.Pod) {
	h.update(ctx, podworkers.UpdateCreate, pods)
}

func (h *handler) HandlePodUpdates(ctx context.Context, pods []*v1.Pod) {
	h.update(ctx, podworkers.UpdateUpdate, pods)
}

func (h *handler) HandlePodRemoves(ctx context.Context, pods []*v1.Pod) {
	h.update(ctx, podworkers.UpdateKill, pods)
}

func (h *handler) HandlePodReconcile(context.Context, []*v1.Pod) {} // no readiness gates, no evictions here

func (h *handler) HandlePodSyncs(ctx context.Context, pods []*v1.Pod) {
	h.update(ctx, podworkers.UpdateSync, pods)
}

func (h *handler) HandlePodCleanups(ctx context.Context) error {
	pods := h.loop.Pods()
	desired := sets.New[types.UID]()
	for _, p := range pods {
		desired.Insert(p.UID)
	}
	known := h.workers.SyncKnownPods(ctx, desired)
	for _, p := range pods {
		if _, ok := known[p.UID]; !ok {
			h.send(ctx, podworkers.Update{Type: podworkers.UpdateCreate, Pod: p})
		}
	}
	// Running runtime pods with no config.
	for _, uid := range h.cache.UIDs() {
		st, _ := h.cache.Get(uid)
		if _, ok := known[uid]; ok || desired.Has(uid) || !hasReadySandbox(st) {
			continue
		}
		h.send(ctx, podworkers.Update{Type: podworkers.UpdateKill, RunningPod: &podworkers.RuntimePod{
			UID: uid, Name: st.Name, Namespace: st.Namespace,
		}})
	}
	return nil
}

func hasReadySandbox(st *pleg.PodStatus) bool {
	for _, sb := range st.SandboxStatuses {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			return true
		}
	}
	return false
}

// runtimeContainers returns the fake runtime's containers of uid by ID.
func runtimeContainers(rt *critesting.FakeRuntimeService, uid types.UID) map[string]runtimeapi.ContainerState {
	rt.Lock()
	defer rt.Unlock()
	out := map[string]runtimeapi.ContainerState{}
	for id, c := range rt.Containers {
		if c.Labels[pleg.PodUIDLabel] == string(uid) {
			out[id] = c.State
		}
	}
	return out
}

func runtimeSandboxes(rt *critesting.FakeRuntimeService, uid types.UID) map[string]runtimeapi.PodSandboxState {
	rt.Lock()
	defer rt.Unlock()
	out := map[string]runtimeapi.PodSandboxState{}
	for id, sb := range rt.Sandboxes {
		if sb.Metadata.Uid == string(uid) {
			out[id] = sb.State
		}
	}
	return out
}

// TestProviderLoop runs a provider on pleg + podworkers + syncloop over
// cri-api's fake runtime: a pod is created, its container exits and is
// restarted, and the removed pod is killed and finished.
func TestProviderLoop(t *testing.T) {
	defer goleak.VerifyNone(t)
	const uid = types.UID("uid-web")
	clk := clocktesting.NewFakeClock(t0)
	rt := critesting.NewFakeRuntimeService()

	// The PLEG's cache first: the pod workers wait on it.
	cache := pleg.NewCache()
	b := &barrier{cache: cache, waiting: map[types.UID]waiter{}}
	prov := &provider{rt: rt, cache: cache, barrier: b, clk: clk}
	workers, err := podworkers.New(podworkers.Config{
		Syncer:        prov,
		StatusBarrier: b.wait,
		Clock:         clk,
		ResyncJitter:  -1,
		BackOffJitter: -1,
	})
	require.NoError(t, err)
	h := &handler{workers: workers, cache: cache}

	var diedMu sync.Mutex
	died := map[types.UID][]containerid.ID{}
	var gen *pleg.Generator
	loop, err := syncloop.New(syncloop.Config{
		Handler:         h,
		ExternalSources: []string{kubetypes.APIServerSource},
		RuntimeHealth:   func() error { return gen.Healthy() },
		PodsToSync:      workers.DuePods,
		OnContainerDied: func(_ context.Context, uid types.UID, id containerid.ID) {
			diedMu.Lock()
			died[uid] = append(died[uid], id)
			diedMu.Unlock()
		},
		Clock: clk,
	})
	require.NoError(t, err)
	h.loop = loop
	gen, err = pleg.New(pleg.Config{
		Runtime:     rt,
		RuntimeName: "fake",
		Cache:       cache,
		Sink:        loop.HandlePLEGEvent,
		Clock:       clk,
	})
	require.NoError(t, err)
	prov.gen = gen

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A pod the runtime still runs from before, with no config anywhere:
	// housekeeping finds it in the PLEG cache and kills it.
	const orphan = types.UID("uid-orphan")
	orphanSandbox := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "old", Namespace: "default", Uid: string(orphan)},
		Labels:   podLabels(orphan),
	}
	sb, err := rt.RunPodSandbox(ctx, orphanSandbox, "")
	require.NoError(t, err)
	orphanID, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "old:1"}, Labels: podLabels(orphan),
	}, orphanSandbox)
	require.NoError(t, err)
	require.NoError(t, rt.StartContainer(ctx, orphanID))

	// Relist once before the loops start: Healthy fails until then.
	_, err = gen.Relist(ctx)
	require.NoError(t, err)
	require.NoError(t, gen.Healthy())
	waits := []func(){
		runBlock(t, ctx, "pleg", gen.Run),
		runBlock(t, ctx, "podworkers", workers.Run),
		runBlock(t, ctx, "syncloop", loop.Run),
	}
	d := &driver{t: t, clk: clk,
		accessors: []accessor{{"pleg", gen.NextWake}, {"syncloop", loop.NextWake}},
		idle:      func() bool { return workers.Active() == 0 && !b.released() }, // Active first
		explain: func() string {
			return fmt.Sprintf("active %d; barrier %v; calls %v", workers.Active(), b, prov.history(uid))
		},
	}
	var states []podworkers.State
	d.onStep = func(time.Time) {
		if s, ok := workers.PodState(uid); ok && (len(states) == 0 || states[len(states)-1] != s) {
			states = append(states, s)
		}
	}

	newPod := func() *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: uid},
			Spec: v1.PodSpec{
				RestartPolicy: v1.RestartPolicyAlways,
				Containers:    []v1.Container{{Name: "app", Image: "registry.example.com/web:1"}},
			},
		}
	}
	firstID := critesting.BuildContainerName(&runtimeapi.ContainerMetadata{Name: "app"}, "web_default_uid-web_0")
	restartID := critesting.BuildContainerName(&runtimeapi.ContainerMetadata{Name: "app", Attempt: 1}, "web_default_uid-web_0")

	loop.Set(ctx, kubetypes.APIServerSource, []*v1.Pod{newPod()})
	d.runUntil(5*time.Second,
		action{2 * time.Second, func() {
			// The pod runs in the runtime.
			require.Equal(t, map[string]runtimeapi.PodSandboxState{"web_default_uid-web_0": runtimeapi.PodSandboxState_SANDBOX_READY}, runtimeSandboxes(rt, uid))
			require.Equal(t, map[string]runtimeapi.ContainerState{firstID: runtimeapi.ContainerState_CONTAINER_RUNNING}, runtimeContainers(rt, uid))
		}},
	)
	// The orphan was killed by the first housekeeping, once, and stays
	// stopped (a stopped runtime pod is not killed again).
	require.Equal(t, []string{"2s SyncTerminatingRuntimePod"}, transcript(prov.history(orphan)))
	require.Equal(t, map[string]runtimeapi.PodSandboxState{sb: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}, runtimeSandboxes(rt, orphan))
	require.Equal(t, map[string]runtimeapi.ContainerState{orphanID: runtimeapi.ContainerState_CONTAINER_EXITED}, runtimeContainers(rt, orphan))
	before := len(prov.history(uid))

	// The container exits.
	rt.Lock()
	c := rt.Containers[firstID]
	c.State, c.ExitCode, c.FinishedAt = runtimeapi.ContainerState_CONTAINER_EXITED, 1, clk.Now().UnixNano()
	rt.Unlock()
	d.runUntil(10 * time.Second)
	diedMu.Lock()
	require.Equal(t, map[types.UID][]containerid.ID{
		uid:    {{Type: "fake", ID: firstID}},
		orphan: {{Type: "fake", ID: sb}, {Type: "fake", ID: orphanID}}, // PLEG events of pods without config too
	}, died, "OnContainerDied")
	diedMu.Unlock()
	afterExit := prov.history(uid)[before:]
	require.NotEmpty(t, afterExit)
	require.Equal(t, syncCall{"SyncPod", uid, podworkers.UpdateSync, 0, 6 * time.Second}, afterExit[0], "the next relist sees the exit and the pod is synced")
	require.Equal(t, map[string]runtimeapi.ContainerState{
		firstID:   runtimeapi.ContainerState_CONTAINER_EXITED,
		restartID: runtimeapi.ContainerState_CONTAINER_RUNNING,
	}, runtimeContainers(rt, uid))

	// Nothing happens to the pod for a minute: the periodic resync comes
	// from DuePods through the loop.
	last := prov.history(uid)
	lastSync := last[len(last)-1].at
	d.runUntil(lastSync + 61*time.Second)
	resync := prov.history(uid)[len(last):]
	require.Len(t, resync, 1)
	require.Equal(t, podworkers.UpdateSync, resync[0].update)
	require.Equal(t, lastSync+time.Minute, resync[0].at, "ResyncInterval after the last sync, no jitter")

	// The pod is removed from its source: killed, then finished.
	removedAt := clk.Now().Sub(t0)
	before = len(prov.history(uid))
	loop.Set(ctx, kubetypes.APIServerSource, nil)
	d.runUntil(removedAt + 10*time.Second)
	var methods []string
	for _, c := range prov.history(uid)[before:] {
		methods = append(methods, c.method)
	}
	require.Equal(t, []string{"SyncTerminatingPod", "SyncTerminatedPod"}, methods)
	require.Equal(t, removedAt, prov.history(uid)[before].at, "killed at once")
	require.True(t, workers.ShouldPodBeFinished(uid))
	require.Equal(t, []podworkers.State{podworkers.StateSyncing, podworkers.StateTerminated, podworkers.StateFinished}, states)
	require.Empty(t, runtimeContainers(rt, uid))
	require.Empty(t, runtimeSandboxes(rt, uid))
	_, known := workers.PodState(uid)
	require.False(t, known, "housekeeping (SyncKnownPods) forgot the finished pod")
	require.Empty(t, loop.Pods())
	require.Equal(t, []types.UID{orphan}, cache.UIDs(), "the web pod left the PLEG cache")
	require.Len(t, prov.history(orphan), 1, "the stopped orphan was not killed again")

	cancel()
	for _, wait := range waits {
		wait()
	}
	t.Logf("clock steps: %d, polls with an unarmed timer: %d, with Active 0 and a released barrier: %d", d.steps, d.unarmed, b.caught)
	require.Empty(t, prov.errs)
	require.Empty(t, h.errs)
	// The whole life of the pod, as the provider saw it, typically:
	//   0s SyncPod create        ADD
	//   1s SyncPod sync          ContainerStarted, once the next relist made
	//                            the cache fresher than the create
	//   6s SyncPod sync          ContainerDied: restart
	//   7s SyncPod sync          ContainerStarted of the restarted container
	//   1m7s SyncPod sync        periodic resync (DuePods)
	//   1m8s SyncTerminatingPod  REMOVE -> UpdateKill
	//   1m9s SyncTerminatedPod   after the next relist
	// The events of one relist can reach the loop in two iterations, and the
	// second then costs one more sync a relist period later (seen about once
	// in 200 runs), so only the first sync is pinned here; the others are
	// checked above.
	life := transcript(prov.history(uid))
	t.Log(life)
	require.Equal(t, []string{"0s SyncPod create", "1s SyncPod sync"}, life[:2])
	for _, c := range prov.history(uid)[1:] {
		if c.method == "SyncPod" {
			require.Equal(t, podworkers.UpdateSync, c.update)
		}
	}
}
