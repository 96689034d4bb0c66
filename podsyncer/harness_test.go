package podsyncer_test

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/podstatus"
	"github.com/nodekit/nodekit/podsyncer"
	"github.com/nodekit/nodekit/podsyncer/podnet"
	"github.com/nodekit/nodekit/podworkers"
)

// TestMain fails the package when a test leaves a goroutine behind: every
// harness closes its CRI clients and stops its simulator at cleanup.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Images the simulator holds from the start; others are pulled on demand.
const (
	appV1   = "example.com/app:v1"
	appV2   = "example.com/app:v2"
	initImg = "example.com/init:v1"
	sideImg = "example.com/side:v1"
)

// epoch is where the fake clocks start (the CRI rejects zero timestamps).
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// harness is one Syncer on a crisim runtime served over a real gRPC socket
// and reached with the kubelet's CRI client, with a real podstatus.Manager
// (no API client) and fakes for volumes and probes. Everything runs on one
// fake clock.
type harness struct {
	t        *testing.T
	ctx      context.Context
	clk      *clocktesting.FakeClock
	sim      *crisim.Sim
	rt       criapi.RuntimeService // the raw client, for assertions
	calls    *recordingRuntime     // what the syncer asked of the runtime
	img      criapi.ImageManagerService
	status   *podstatus.Manager
	vols     *fakeVolumes
	probes   *fakeProbes
	recorder *record.FakeRecorder
	logsDir  string
	cfg      podsyncer.Config
	s        *podsyncer.Syncer
	// events are the recorder's events since the last takeEvents, as
	// "<type> <reason> <message>".
	events []string
}

// newHarness builds a harness; edit adjusts the Syncer's config before New.
func newHarness(t *testing.T, edit ...func(*podsyncer.Config, *harness)) *harness {
	t.Helper()
	h := &harness{t: t, ctx: context.Background(), clk: clocktesting.NewFakeClock(epoch)}
	h.sim = crisim.New(crisim.Config{Clock: h.clk, Images: []crisim.Image{{Ref: appV1}, {Ref: appV2}, {Ref: initImg}, {Ref: sideImg}}})
	// The socket lives in a short directory of its own rather than in
	// t.TempDir: that one is named after the test, which can push the path
	// past the unix socket limit, and a "#" of a subtest name ends the
	// "unix://" endpoint URL early.
	sockDir, err := os.MkdirTemp("", "podsyncer")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
	endpoint, stop, err := h.sim.ListenAndServe(filepath.Join(sockDir, "cri.sock"))
	require.NoError(t, err)
	t.Cleanup(stop)
	h.rt, err = remote.NewRemoteRuntimeService(h.ctx, endpoint, 10*time.Second, nil, false)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.rt.Close(h.ctx)) })
	h.img, err = remote.NewRemoteImageService(h.ctx, endpoint, 10*time.Second, nil, false)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.img.Close(h.ctx)) })
	version, err := h.rt.Version(h.ctx, "")
	require.NoError(t, err)

	h.status, err = podstatus.New(podstatus.Config{Clock: h.clk})
	require.NoError(t, err)
	h.calls = &recordingRuntime{RuntimeService: h.rt}
	h.vols = &fakeVolumes{dir: t.TempDir()}
	h.probes = newFakeProbes()
	h.recorder = record.NewFakeRecorder(100)
	h.logsDir = filepath.Join(t.TempDir(), "pods")
	h.cfg = podsyncer.Config{Runtime: h.calls, Images: h.img, RuntimeName: version.RuntimeName, Status: h.status,
		Volumes: h.vols, Probes: h.probes, Recorder: h.recorder, Clock: h.clk, PodLogsDir: h.logsDir,
		SeccompRoot: filepath.Join(t.TempDir(), "seccomp"), MaskedPaths: []string{"/proc/kcore"},
		Network: podnet.Config{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"}}
	for _, e := range edit {
		e(&h.cfg, h)
	}
	h.s, err = podsyncer.New(h.cfg)
	require.NoError(t, err)
	return h
}

// drain moves the recorder's events into h.events; the FakeRecorder
// blocks once its buffer is full, so every harness call drains it.
func (h *harness) drain() {
	for {
		select {
		case e := <-h.recorder.Events:
			h.events = append(h.events, e)
		default:
			return
		}
	}
}

// takeEvents returns the events since the last call.
func (h *harness) takeEvents() []string {
	h.drain()
	out := h.events
	h.events = nil
	return out
}

// reasons are the reasons of events.
func reasons(events []string) []string {
	var out []string
	for _, e := range events {
		if f := strings.Fields(e); len(f) > 1 {
			out = append(out, f[1])
		}
	}
	return out
}

// hasEvent reports whether one of events has the reason and contains the
// text.
func hasEvent(events []string, reason, text string) bool {
	return slices.ContainsFunc(events, func(e string) bool {
		f := strings.Fields(e)
		return len(f) > 1 && f[1] == reason && strings.Contains(e, text)
	})
}

// sync runs SyncPod as a pod worker would.
func (h *harness) sync(pod *v1.Pod) (bool, error) {
	h.t.Helper()
	defer h.drain()
	return h.s.SyncPod(h.ctx, podworkers.UpdateSync, pod, nil)
}

// mustSync runs SyncPod and requires it to succeed.
func (h *harness) mustSync(pod *v1.Pod) bool {
	h.t.Helper()
	done, err := h.sync(pod)
	require.NoError(h.t, err)
	return done
}

func (h *harness) terminate(pod *v1.Pod, grace int64, fn podworkers.StatusFunc) error {
	defer h.drain()
	return h.s.SyncTerminatingPod(h.ctx, pod, grace, fn)
}

// podStatus is the status the syncer last set for pod.
func (h *harness) podStatus(pod *v1.Pod) v1.PodStatus {
	h.t.Helper()
	st, ok := h.status.PodStatus(pod.UID)
	require.True(h.t, ok, "no status was set for pod %s", pod.Name)
	return st
}

// sandboxes are the pod's sandboxes in the runtime, oldest first.
func (h *harness) sandboxes(pod *v1.Pod) []*runtimeapi.PodSandbox {
	h.t.Helper()
	sbs, err := h.rt.ListPodSandbox(h.ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(pod.UID)}})
	require.NoError(h.t, err)
	return sbs
}

// instances are the runtime's instances of the named container of pod,
// oldest first.
func (h *harness) instances(pod *v1.Pod, name string) []*runtimeapi.ContainerStatus {
	h.t.Helper()
	cs, err := h.rt.ListContainers(h.ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{
		"io.kubernetes.pod.uid": string(pod.UID), "io.kubernetes.container.name": name}})
	require.NoError(h.t, err)
	var out []*runtimeapi.ContainerStatus
	for _, c := range cs {
		st, err := h.rt.ContainerStatus(h.ctx, c.Id, false)
		require.NoError(h.t, err)
		out = append(out, st.Status)
	}
	// The simulator's clock may not move between two instances: the
	// attempt number orders them.
	slices.SortStableFunc(out, func(a, b *runtimeapi.ContainerStatus) int {
		return cmp.Or(cmp.Compare(a.Metadata.Attempt, b.Metadata.Attempt), cmp.Compare(a.CreatedAt, b.CreatedAt))
	})
	return out
}

// latest is the newest instance of the named container; it must exist.
func (h *harness) latest(pod *v1.Pod, name string) *runtimeapi.ContainerStatus {
	h.t.Helper()
	all := h.instances(pod, name)
	require.NotEmpty(h.t, all, "container %s of pod %s was never created", name, pod.Name)
	return all[len(all)-1]
}

// exit makes the newest instance of the named container exit now.
func (h *harness) exit(pod *v1.Pod, name string, code int32) {
	h.t.Helper()
	require.NoError(h.t, h.sim.ExitContainer(h.latest(pod, name).Id, code, ""))
}

// awaitWaiters waits until the fake clock has n waiters. The syncer (hooks,
// grace timers) and the simulator (exec delays, stop timeouts) arm their
// timers on goroutines of their own while a call is in flight, so a test
// must see them armed before it steps the clock; polling the clock's waiter
// count, bounded in real time, is the only way to observe that.
func (h *harness) awaitWaiters(n int) {
	h.t.Helper()
	require.Eventually(h.t, func() bool { return h.clk.Waiters() == n }, 10*time.Second, time.Millisecond,
		"the fake clock never had %d waiters", n)
}

// awaitState waits until the newest instance of the named container is in
// state. A scripted exit fires on a goroutine of the simulator after the
// clock step that triggers it (crisim's documented behaviour), so the
// test polls the runtime, bounded in real time, as a last resort.
func (h *harness) awaitState(pod *v1.Pod, name string, state runtimeapi.ContainerState) {
	h.t.Helper()
	require.Eventually(h.t, func() bool {
		all := h.instances(pod, name)
		return len(all) > 0 && all[len(all)-1].State == state
	}, 10*time.Second, time.Millisecond, "container %s never reached %s", name, state)
}

// newPod is a pod with restartPolicy Always running the given containers.
func newPod(name string, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: containers,
			TerminationGracePeriodSeconds: ptr.To[int64](30)}}
}

func ctr(name, image string) v1.Container { return v1.Container{Name: name, Image: image} }

// sidecar is an init container with restartPolicy Always.
func sidecar(name, image string) v1.Container {
	c := ctr(name, image)
	c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	return c
}

func containerStatus(t *testing.T, st v1.PodStatus, name string) v1.ContainerStatus {
	t.Helper()
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses} {
		for _, cs := range list {
			if cs.Name == name {
				return cs
			}
		}
	}
	require.Failf(t, "no container status", "container %s", name)
	return v1.ContainerStatus{}
}

func podCondition(t *testing.T, st v1.PodStatus, typ v1.PodConditionType) v1.PodCondition {
	t.Helper()
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	require.Failf(t, "no condition", "condition %s", typ)
	return v1.PodCondition{}
}

// waitingReason is the container's waiting reason, "" when not waiting.
func waitingReason(t *testing.T, st v1.PodStatus, name string) string {
	t.Helper()
	if w := containerStatus(t, st, name).State.Waiting; w != nil {
		return w.Reason
	}
	return ""
}

// recordingRuntime is the CRI client the syncer uses, recording the
// configs and stops it sends (crisim does not report hostnames, DNS or
// port mappings back).
type recordingRuntime struct {
	criapi.RuntimeService
	mu         sync.Mutex
	sandboxes  []*runtimeapi.PodSandboxConfig
	handlers   []string
	containers []*runtimeapi.ContainerConfig
	stops      []stopCall
}

type stopCall struct {
	id      string
	timeout int64
}

func (r *recordingRuntime) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	r.mu.Lock()
	r.sandboxes = append(r.sandboxes, cfg)
	r.handlers = append(r.handlers, handler)
	r.mu.Unlock()
	return r.RuntimeService.RunPodSandbox(ctx, cfg, handler)
}

func (r *recordingRuntime) CreateContainer(ctx context.Context, sb string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	r.mu.Lock()
	r.containers = append(r.containers, cfg)
	r.mu.Unlock()
	return r.RuntimeService.CreateContainer(ctx, sb, cfg, sbCfg)
}

func (r *recordingRuntime) StopContainer(ctx context.Context, id string, timeout int64) error {
	r.mu.Lock()
	r.stops = append(r.stops, stopCall{id, timeout})
	r.mu.Unlock()
	return r.RuntimeService.StopContainer(ctx, id, timeout)
}

func (r *recordingRuntime) sandboxConfigs() []*runtimeapi.PodSandboxConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sandboxes)
}

// containerConfig is the last config sent for the named container.
func (r *recordingRuntime) containerConfig(name string) *runtimeapi.ContainerConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.containers) - 1; i >= 0; i-- {
		if r.containers[i].GetMetadata().GetName() == name {
			return r.containers[i]
		}
	}
	return nil
}

func (r *recordingRuntime) stopCalls() []stopCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.stops)
}

// fakeVolumes records SetUpPod and TearDownPod; it mounts nothing.
type fakeVolumes struct {
	dir      string
	mu       sync.Mutex
	setUp    []types.UID
	tornDown []types.UID
	setUpErr error
}

func (v *fakeVolumes) SetUpPod(_ context.Context, pod *v1.Pod) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.setUp = append(v.setUp, pod.UID)
	return v.setUpErr
}

func (v *fakeVolumes) TearDownPod(_ context.Context, uid types.UID) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.tornDown = append(v.tornDown, uid)
	return nil
}

func (v *fakeVolumes) ContainerMounts(_ context.Context, pod *v1.Pod, c *v1.Container, _ map[string]string) ([]*runtimeapi.Mount, error) {
	var out []*runtimeapi.Mount
	for _, vm := range c.VolumeMounts {
		out = append(out, &runtimeapi.Mount{ContainerPath: vm.MountPath, HostPath: filepath.Join(v.PodDir(pod.UID), "volumes", vm.Name),
			Readonly: vm.ReadOnly})
	}
	return out, nil
}

func (v *fakeVolumes) PodDir(uid types.UID) string { return filepath.Join(v.dir, string(uid)) }

func (v *fakeVolumes) failSetUp(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.setUpErr = err
}

func (v *fakeVolumes) calls() (setUp, tornDown []types.UID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.setUp), slices.Clone(v.tornDown)
}

// fakeProbes is a prober whose results the test sets: startup pending by
// container name, liveness and startup failures by container ID. Running
// containers are ready once started unless marked unready.
type fakeProbes struct {
	mu         sync.Mutex
	notStarted map[string]bool
	unready    map[string]bool
	liveness   map[string]bool
	startup    map[string]bool
	stopped    []types.UID // pods whose liveness and startup probes were stopped
	onStop     func()      // called by StopLivenessAndStartup, if set
}

func (p *fakeProbes) StopLivenessAndStartup(pod *v1.Pod) {
	p.mu.Lock()
	p.stopped = append(p.stopped, pod.UID)
	onStop := p.onStop
	p.mu.Unlock()
	if onStop != nil {
		onStop()
	}
}

func (p *fakeProbes) stoppedPods() []types.UID {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.stopped)
}

func newFakeProbes() *fakeProbes {
	return &fakeProbes{notStarted: map[string]bool{}, unready: map[string]bool{}, liveness: map[string]bool{}, startup: map[string]bool{}}
}

func (p *fakeProbes) ContainerState(_ *v1.Pod, name, id string) (started, livenessFailed, startupFailed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.notStarted[name], p.liveness[id], p.startup[id]
}

func (p *fakeProbes) UpdatePodStatus(_ context.Context, _ *v1.Pod, status *v1.PodStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, list := range [][]v1.ContainerStatus{status.InitContainerStatuses, status.ContainerStatuses} {
		for i := range list {
			cs := &list[i]
			if cs.State.Running == nil {
				cs.Ready = false
				continue
			}
			started := !p.notStarted[cs.Name]
			cs.Started = &started
			cs.Ready = started && !p.unready[cs.Name]
		}
	}
}

func (p *fakeProbes) set(f func(p *fakeProbes)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}
