package integration

// The reference agent under faults (issue 22): control-plane outage, agent
// crash and restart at every step of a pod's life, duplicate node names,
// least privilege. Each scenario asserts its outcome and logs its time to
// recover.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/examples/kubelet/agent"
	"github.com/nodekit/nodekit/nodeclaim"
)

// apiWatch is the agent's transport as the tests see it: it can cut the
// API server off, counts the requests tried while cut off, and counts every
// 403 the node identity receives.
type apiWatch struct {
	down      atomic.Bool
	triedDown atomic.Int64
	mu        sync.Mutex
	forbidden []string
	byPath    map[string]int // requests tried while cut off, by method and path
}

func (w *apiWatch) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if w.down.Load() {
			w.triedDown.Add(1)
			w.mu.Lock()
			if w.byPath == nil {
				w.byPath = map[string]int{}
			}
			w.byPath[r.Method+" "+r.URL.Path]++
			w.mu.Unlock()
			return nil, errors.New("dial tcp: connect: connection refused")
		}
		resp, err := next.RoundTrip(r)
		if err == nil && resp.StatusCode == http.StatusForbidden {
			w.mu.Lock()
			w.forbidden = append(w.forbidden, r.Method+" "+r.URL.Path)
			w.mu.Unlock()
		}
		return resp, err
	})
}

// forbiddenExcept returns the 403s other than GETs of the given pods (the
// node authorizer refuses a node the pods no longer bound to it: expected
// after a deletion).
func (w *apiWatch) forbiddenExcept(gonePods ...string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
next:
	for _, f := range w.forbidden {
		for _, p := range gonePods {
			if f == "GET /api/v1/namespaces/default/pods/"+p {
				continue next
			}
		}
		out = append(out, f)
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// agentRun is one running agent.
type agentRun struct {
	a      *agent.Agent
	cancel context.CancelFunc
	done   chan error
}

// startAgent starts the reference agent for node on sim with its state in
// rootDir; w (optional) wraps its API transport, adjust (optional) changes
// the options.
func startAgent(t *testing.T, node string, sim *crisim.Sim, rootDir string, w *apiWatch, adjust ...func(*agent.Options)) *agentRun {
	t.Helper()
	kube := srv.NodeConfig(node)
	if w != nil {
		kube.WrapTransport = w.wrap
	}
	opts := agent.Options{NodeName: node, Kube: kube, Sim: sim, HealthzAddr: "127.0.0.1:0",
		RootDir: rootDir, PodManifestPath: t.TempDir(), MemoryCapacity: 4 << 30}
	for _, f := range adjust {
		f(&opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := agent.New(ctx, opts)
	require.NoError(t, err)
	r := &agentRun{a: a, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	return r
}

// stop ends the agent as a crash would from the pods' point of view: its
// containers keep running, nothing is cleaned up. It returns Run's error.
func (r *agentRun) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not stop")
		return nil
	}
}

func createPod(t *testing.T, cs kubernetes.Interface, pod *v1.Pod) {
	t.Helper()
	_, err := cs.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
}

func simplePod(name, node string, policy v1.RestartPolicy) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{NodeName: node, RestartPolicy: policy,
		Containers: []v1.Container{{Name: "app", Image: "busybox"}}}}
}

// runningID waits until the pod runs its one container and returns the
// container's runtime ID.
func runningID(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	var id string
	require.Eventually(t, func() bool {
		p := getPod(t, cs, name)
		if p == nil || p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) != 1 ||
			p.Status.ContainerStatuses[0].State.Running == nil {
			return false
		}
		_, id, _ = strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
		return id != ""
	}, 45*time.Second, 50*time.Millisecond, "%s running: %+v", name, podStatusOf(t, name))
	return id
}

func leaseRenewTime(t *testing.T, cs kubernetes.Interface, node string) time.Time {
	l, err := cs.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), node, metav1.GetOptions{})
	if err != nil || l.Spec.RenewTime == nil {
		return time.Time{}
	}
	return l.Spec.RenewTime.Time
}

// hasEvent reports whether an event with reason was recorded on the named
// object (a pod in default, or a node).
func hasEvent(cs kubernetes.Interface, object, reason string) bool {
	evs, err := cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + object})
	if err != nil {
		return false
	}
	for _, e := range evs.Items {
		if e.Reason == reason {
			return true
		}
	}
	return false
}

func deletePodNow(t *testing.T, cs kubernetes.Interface, name string) {
	grace := int64(0)
	_ = cs.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
}

// TestReferenceAgentFaultAPIServerOutage: the API server is unreachable for
// longer than the node monitor grace period (40s). Running pods keep
// running, untouched; a container that exits twice meanwhile is restarted
// by the agent on its own; the agent backs off instead of flooding; when
// the API server returns the lease, the node status and the latest pod
// status land.
func TestReferenceAgentFaultAPIServerOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a 45 s outage")
	}
	const node, outage = "fault-outage", 45 * time.Second
	admin := srv.AdminClient()
	ensureDefaultServiceAccount(t, admin, "default")
	sim := crisim.New(crisim.Config{})
	w := &apiWatch{}
	r := startAgent(t, node, sim, t.TempDir(), w)
	defer func() { require.NoError(t, r.stop(t)) }()
	defer deletePodNow(t, admin, "outage-keep")
	defer deletePodNow(t, admin, "outage-flip")

	createPod(t, admin, simplePod("outage-keep", node, v1.RestartPolicyAlways))
	createPod(t, admin, simplePod("outage-flip", node, v1.RestartPolicyAlways))
	keep := runningID(t, admin, "outage-keep")
	flip := runningID(t, admin, "outage-flip")
	require.Eventually(t, func() bool { return !leaseRenewTime(t, admin, node).IsZero() }, 30*time.Second, 50*time.Millisecond)

	w.down.Store(true)
	cut := time.Now()
	lastRenew := leaseRenewTime(t, admin, node)
	// The flipping container exits twice; the agent restarts it each time
	// (CrashLoopBackOff 10 s, then 20 s) without the API server.
	require.NoError(t, sim.ExitContainer(flip, 1, "Error"))
	var second string
	require.Eventually(t, func() bool {
		for _, p := range r.a.Pods() {
			if p.Name == "outage-flip" && len(p.Status.ContainerStatuses) == 1 {
				cs := p.Status.ContainerStatuses[0]
				_, id, _ := strings.Cut(cs.ContainerID, "://")
				if cs.State.Running != nil && id != flip {
					second = id
					return true
				}
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "restarted during the outage")
	require.NoError(t, sim.ExitContainer(second, 2, "Error"))
	time.Sleep(time.Until(cut.Add(outage)))
	tried := w.triedDown.Load()
	assert.Equal(t, lastRenew, leaseRenewTime(t, admin, node), "nothing was renewed while cut off")

	for _, p := range r.a.Pods() {
		if p.Name == "outage-keep" {
			cs := p.Status.ContainerStatuses[0]
			assert.Zero(t, cs.RestartCount, "the untouched pod kept running")
			assert.True(t, strings.HasSuffix(cs.ContainerID, "://"+keep), "same container %s", cs.ContainerID)
		}
	}
	w.down.Store(false)
	back := time.Now()
	var leaseBack, flipBack time.Duration
	require.Eventually(t, func() bool {
		if leaseBack == 0 && leaseRenewTime(t, admin, node).After(lastRenew) {
			leaseBack = time.Since(back)
		}
		if flipBack == 0 {
			if p := getPod(t, admin, "outage-flip"); p != nil && len(p.Status.ContainerStatuses) == 1 {
				cs := p.Status.ContainerStatuses[0]
				if cs.RestartCount >= 2 && cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ExitCode == 2 {
					flipBack = time.Since(back)
				}
			}
		}
		return leaseBack > 0 && flipBack > 0
	}, 60*time.Second, 50*time.Millisecond, "lease and the latest pod status after the outage: %+v", podStatusOf(t, "outage-flip"))
	require.Eventually(t, func() bool { return nodeCondition(t, admin, node, v1.NodeReady) == v1.ConditionTrue }, 30*time.Second, 50*time.Millisecond)
	p := getPod(t, admin, "outage-keep")
	assert.Zero(t, p.Status.ContainerStatuses[0].RestartCount)
	t.Logf("outage %v: %d requests tried while cut off (%.1f/s); lease renewed %v and the latest pod status written %v after the API server returned",
		outage, tried, float64(tried)/outage.Seconds(), leaseBack.Round(time.Millisecond), flipBack.Round(time.Millisecond))
	w.mu.Lock()
	t.Logf("tried while cut off, by request: %v", w.byPath)
	w.mu.Unlock()
	assert.Less(t, tried, int64(outage.Seconds()*3), "backoff, not a flood (before the fast-path fix: 39 requests a second)")
	assert.Empty(t, w.forbiddenExcept(), "403s for the node identity")
}

// TestReferenceAgentFaultRestartAdopts: the agent stops (as a crash: its
// containers keep running) and a new agent starts on the same state. It
// adopts running containers without restarting them, and converges pods it
// was killed in the middle of: a sandbox created but the container not yet
// (blocked CreateContainer), an image pull in progress, and a graceful
// deletion whose container was still stopping. Nothing is started twice,
// nothing is lost.
func TestReferenceAgentFaultRestartAdopts(t *testing.T) {
	const node = "fault-restart"
	admin := srv.AdminClient()
	ensureDefaultServiceAccount(t, admin, "default")
	sim := crisim.New(crisim.Config{})
	root := t.TempDir()
	w := &apiWatch{}
	r := startAgent(t, node, sim, root, w)
	names := []string{"adopt-run", "adopt-create", "adopt-pull", "adopt-delete"}
	defer func() {
		for _, n := range names {
			deletePodNow(t, admin, n)
		}
	}()

	createPod(t, admin, simplePod("adopt-run", node, v1.RestartPolicyAlways))
	createPod(t, admin, simplePod("adopt-delete", node, v1.RestartPolicyAlways))
	run := runningID(t, admin, "adopt-run")
	runningID(t, admin, "adopt-delete")

	// Kill points: a container creation and an image pull block; a
	// deletion is stopping its container.
	block := crisim.Fault{Latency: time.Hour}
	sim.Inject("CreateContainer", block)
	createPod(t, admin, simplePod("adopt-create", node, v1.RestartPolicyAlways))
	require.Eventually(t, func() bool { return sim.Calls("CreateContainer") >= 3 }, 30*time.Second, 50*time.Millisecond, "creation in flight")
	sim.ClearFaults()
	sim.Inject("PullImage", block)
	pull := simplePod("adopt-pull", node, v1.RestartPolicyAlways)
	pull.Spec.Containers[0].Image = "registry.example/fresh:1"
	pull.Spec.Containers[0].ImagePullPolicy = v1.PullAlways
	createPod(t, admin, pull)
	require.Eventually(t, func() bool { return sim.Calls("PullImage") >= 1 }, 30*time.Second, 50*time.Millisecond, "pull in flight")
	sim.Inject("StopContainer", block)
	grace := int64(30)
	require.NoError(t, admin.CoreV1().Pods("default").Delete(context.Background(), "adopt-delete", metav1.DeleteOptions{GracePeriodSeconds: &grace}))
	require.Eventually(t, func() bool { return sim.Calls("StopContainer") >= 1 }, 30*time.Second, 50*time.Millisecond, "stop in flight")
	sandboxes := sim.Calls("RunPodSandbox")

	require.NoError(t, r.stop(t))
	sim.ClearFaults()
	restarted := time.Now()
	r = startAgent(t, node, sim, root, w)
	defer func() { require.NoError(t, r.stop(t)) }()

	runningID(t, admin, "adopt-create")
	runningID(t, admin, "adopt-pull")
	require.Eventually(t, func() bool { return getPod(t, admin, "adopt-delete") == nil }, 45*time.Second, 50*time.Millisecond,
		"the deletion completes: %+v", podStatusOf(t, "adopt-delete"))
	converged := time.Since(restarted)
	p := getPod(t, admin, "adopt-run")
	assert.Zero(t, p.Status.ContainerStatuses[0].RestartCount, "adopted, not restarted")
	assert.True(t, strings.HasSuffix(p.Status.ContainerStatuses[0].ContainerID, "://"+run), "the same container")
	for _, n := range []string{"adopt-create", "adopt-pull"} {
		assert.Zero(t, getPod(t, admin, n).Status.ContainerStatuses[0].RestartCount, n)
	}
	assert.Equal(t, sandboxes, sim.Calls("RunPodSandbox"), "no sandbox created twice")
	t.Logf("restart: converged %v after the new agent started (adopted 1 running pod, finished 1 creation, 1 pull, 1 deletion)",
		converged.Round(time.Millisecond))
	assert.Empty(t, w.forbiddenExcept("adopt-delete"), "403s for the node identity")
}

// TestReferenceAgentFaultDuplicateNodeName: a second agent started with a
// running agent's node name refuses to start (it would fight over the
// Node, the Lease and the pods); the same agent restarted on its own state
// starts at once; a node whose agent is gone (its Lease expired) is taken
// over.
func TestReferenceAgentFaultDuplicateNodeName(t *testing.T) {
	const node = "fault-duplicate"
	admin := srv.AdminClient()
	sim := crisim.New(crisim.Config{})
	rootA, rootB := t.TempDir(), t.TempDir()
	first := startAgent(t, node, sim, rootA, nil)
	require.Eventually(t, func() bool { return nodeCondition(t, admin, node, v1.NodeReady) == v1.ConditionTrue }, 30*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool { return !leaseRenewTime(t, admin, node).IsZero() }, 30*time.Second, 50*time.Millisecond)
	n, err := admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	idA := n.Annotations[nodeclaim.AnnotationAgentID]
	require.NotEmpty(t, idA)

	second := startAgent(t, node, crisim.New(crisim.Config{}), rootB, nil)
	select {
	case err := <-second.done:
		require.ErrorIs(t, err, nodeclaim.ErrNodeClaimed)
		assert.ErrorContains(t, err, idA)
	case <-time.After(30 * time.Second):
		t.Fatal("the second agent did not refuse")
	}
	second.cancel()
	n, err = admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, idA, n.Annotations[nodeclaim.AnnotationAgentID], "the first agent keeps its node")

	// A clean stop releases the node: the annotation goes, and the same
	// agent restarted on its state (or any agent) starts at once.
	require.NoError(t, first.stop(t))
	n, err = admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, n.Annotations, nodeclaim.AnnotationAgentID, "released on a clean stop")
	first = startAgent(t, node, sim, rootA, nil)
	require.Eventually(t, func() bool { return leaseRenewTime(t, admin, node).After(time.Now().Add(-2 * time.Second)) }, 30*time.Second, 50*time.Millisecond)
	require.NoError(t, first.stop(t))

	// The first agent crashed (its claim stays: put it back as a crash
	// would have left it) and its lease expired: the second takes over.
	n, err = admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	n.Annotations[nodeclaim.AnnotationAgentID] = idA
	_, err = admin.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
	require.NoError(t, err)
	l, err := admin.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(-time.Minute)}
	_, err = admin.CoordinationV1().Leases("kube-node-lease").Update(context.Background(), l, metav1.UpdateOptions{})
	require.NoError(t, err)
	second = startAgent(t, node, crisim.New(crisim.Config{}), rootB, nil)
	require.Eventually(t, func() bool {
		n, err := admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		return err == nil && n.Annotations[nodeclaim.AnnotationAgentID] != idA && n.Annotations[nodeclaim.AnnotationAgentID] != ""
	}, 30*time.Second, 50*time.Millisecond, "taken over")
	require.NoError(t, second.stop(t))
}

// TestReferenceAgentFaultDiskFull: the filesystem of the agent's root
// directory (a 4 MiB tmpfs here) fills up. The node reports DiskPressure
// with an EvictionThresholdMet event, a new pod is refused with a clear
// reason instead of half-created, the agent keeps running; when space
// returns the condition clears and pods run again.
func TestReferenceAgentFaultDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts a tmpfs: needs root")
	}
	const node = "fault-disk"
	admin := srv.AdminClient()
	ensureDefaultServiceAccount(t, admin, "default")
	root := t.TempDir()
	require.NoError(t, syscall.Mount("tmpfs", root, "tmpfs", 0, "size=4m"))
	defer func() { _ = syscall.Unmount(root, syscall.MNT_DETACH) }()
	r := startAgent(t, node, crisim.New(crisim.Config{}), root, nil, func(o *agent.Options) {
		o.EvictionHard, o.EvictionPressureTransitionPeriod = "nodefs.available<20%", 5*time.Second
	})
	defer func() { require.NoError(t, r.stop(t)) }()
	a := r.a
	require.Eventually(t, func() bool { return nodeCondition(t, admin, node, v1.NodeReady) == v1.ConditionTrue }, 30*time.Second, 50*time.Millisecond)
	assert.Equal(t, v1.ConditionFalse, nodeCondition(t, admin, node, v1.NodeDiskPressure))

	filler := filepath.Join(root, "filler")
	f, err := os.Create(filler)
	require.NoError(t, err)
	_, err = io.Copy(f, io.LimitReader(zeros{}, 8<<20))
	require.ErrorIs(t, err, syscall.ENOSPC, "the disk is full")
	require.NoError(t, f.Close())
	full := time.Now()
	require.Eventually(t, func() bool { return nodeCondition(t, admin, node, v1.NodeDiskPressure) == v1.ConditionTrue }, 60*time.Second, 100*time.Millisecond,
		"DiskPressure reported")
	pressureAfter := time.Since(full)
	require.Eventually(t, func() bool { return hasEvent(admin, node, "EvictionThresholdMet") }, 30*time.Second, 100*time.Millisecond,
		"an EvictionThresholdMet event on the node")

	createPod(t, admin, simplePod("disk-refused", node, v1.RestartPolicyAlways))
	defer deletePodNow(t, admin, "disk-refused")
	require.Eventually(t, func() bool {
		p := getPod(t, admin, "disk-refused")
		return p != nil && p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted" && strings.Contains(p.Status.Message, "DiskPressure")
	}, 30*time.Second, 100*time.Millisecond, "refused with the node's condition: %+v", podStatusOf(t, "disk-refused"))
	require.NoError(t, a.Healthy(), "the agent itself is fine")

	require.NoError(t, os.Remove(filler))
	freed := time.Now()
	require.Eventually(t, func() bool { return nodeCondition(t, admin, node, v1.NodeDiskPressure) == v1.ConditionFalse }, 60*time.Second, 100*time.Millisecond,
		"DiskPressure clears after the transition period")
	clearedAfter := time.Since(freed)
	createPod(t, admin, simplePod("disk-after", node, v1.RestartPolicyAlways))
	defer deletePodNow(t, admin, "disk-after")
	runningID(t, admin, "disk-after")
	t.Logf("disk full: DiskPressure %v after the disk filled; cleared %v after space returned (transition period 5s)",
		pressureAfter.Round(time.Millisecond), clearedAfter.Round(time.Millisecond))
}

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestReferenceAgentFaultHostileManifests: static pod manifests at the
// edges — a name too long to be valid, a pod of 500 containers, a container
// with a 2 MiB environment, a file that is not a pod at all — next to a
// normal static pod. The bad ones are refused with a FailedValidation event
// on the node (or run, when valid), the agent stays healthy and the normal
// pod runs and is mirrored.
func TestReferenceAgentFaultHostileManifests(t *testing.T) {
	const node = "fault-hostile"
	admin := srv.AdminClient()
	ensureDefaultServiceAccount(t, admin, "default")
	dir := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	static := func(name string, containers []string) string {
		var b strings.Builder
		b.WriteString(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"default"},"spec":{"containers":[`)
		b.WriteString(strings.Join(containers, ","))
		b.WriteString(`]}}`)
		return b.String()
	}
	c := func(name, extra string) string { return `{"name":"` + name + `","image":"busybox"` + extra + `}` }
	write("normal.json", static("normal", []string{c("app", "")}))
	write("long.json", static(strings.Repeat("x", 300), []string{c("app", "")}))
	var many []string
	for i := range 500 {
		many = append(many, c(fmt.Sprintf("c%d", i), ""))
	}
	write("many.json", static("many", many))
	write("bigenv.json", static("bigenv", []string{c("app", `,"env":[{"name":"BIG","value":"`+strings.Repeat("v", 2<<20)+`"}]`)}))
	write("garbage.json", "\x00\x01 this is not a pod {{{")

	r := startAgent(t, node, crisim.New(crisim.Config{}), t.TempDir(), nil, func(o *agent.Options) { o.PodManifestPath = dir })
	defer func() { require.NoError(t, r.stop(t)) }()
	a := r.a
	mirror := "normal-" + node
	require.Eventually(t, func() bool {
		p := getPod(t, admin, mirror)
		return p != nil && p.Status.Phase == v1.PodRunning
	}, 45*time.Second, 100*time.Millisecond, "the normal static pod runs and is mirrored: %+v", podStatusOf(t, mirror))
	require.Eventually(t, func() bool {
		evs, err := admin.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + node})
		if err != nil {
			return false
		}
		var long, garbage bool
		for _, e := range evs.Items {
			if e.Reason == "FailedValidation" {
				long = long || strings.Contains(e.Message, "long.json")
				garbage = garbage || strings.Contains(e.Message, "garbage.json")
			}
		}
		return long && garbage
	}, 30*time.Second, 100*time.Millisecond, "FailedValidation events name the bad files")
	var many500 bool
	require.Eventually(t, func() bool {
		for _, p := range a.Pods() {
			if p.Name == "many-"+node {
				running := 0
				for _, cs := range p.Status.ContainerStatuses {
					if cs.State.Running != nil {
						running++
					}
				}
				many500 = running == 500
			}
		}
		return many500
	}, 60*time.Second, 200*time.Millisecond, "the 500-container pod is valid and runs")
	require.NoError(t, a.Healthy())
	for _, n := range []string{mirror, "many-" + node, "bigenv-" + node} {
		deletePodNow(t, admin, n)
	}
}

// jumpingClock is the real clock whose readings can jump forward at once,
// as they do for a process that was frozen (a VM paused, SIGSTOP, a long
// GC stop): Now and Since see the jump, timers and tickers fire late.
type jumpingClock struct {
	clock.RealClock
	offset atomic.Int64
}

func (c *jumpingClock) Now() time.Time                  { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *jumpingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *jumpingClock) jump(d time.Duration)            { c.offset.Add(int64(d)) }

// TestReferenceAgentFaultClockSteps: the agent's clock jumps ten minutes,
// then ten more, as if the process had been frozen. Every period runs on
// the injected clock: the lease is renewed within its renew interval (its
// renewTime follows the clock), the node stays Ready, a probed pod is not
// restarted (probe schedules and initial delays stay sane), and the agent
// reports itself healthy within a sync period of each jump.
//
// A backward step of the wall clock is not modelled here: the agent's
// real clock carries Go's monotonic reading, so its timers and the
// durations between its own readings ignore wall steps; only comparisons
// with timestamps written by others (CRI's finishedAt for crash back-off,
// the pod's startTime for activeDeadlineSeconds, a Lease's renewTime) see
// them, as in the kubelet.
func TestReferenceAgentFaultClockSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for lease renewals")
	}
	const node = "fault-clock"
	admin := srv.AdminClient()
	ensureDefaultServiceAccount(t, admin, "default")
	clk := &jumpingClock{}
	r := startAgent(t, node, crisim.New(crisim.Config{}), t.TempDir(), nil, func(o *agent.Options) { o.Clock = clk })
	defer func() { require.NoError(t, r.stop(t)) }()
	a := r.a
	pod := simplePod("clock-probed", node, v1.RestartPolicyAlways)
	pod.Spec.Containers[0].LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
		PeriodSeconds: 1, InitialDelaySeconds: 1}
	createPod(t, admin, pod)
	defer deletePodNow(t, admin, "clock-probed")
	id := runningID(t, admin, "clock-probed")
	require.Eventually(t, func() bool { return !leaseRenewTime(t, admin, node).IsZero() }, 30*time.Second, 50*time.Millisecond)

	for _, step := range []time.Duration{10 * time.Minute, 10 * time.Minute} {
		last := leaseRenewTime(t, admin, node)
		clk.jump(step)
		jumped := time.Now()
		// The lease renews within its interval (10 s, plus jitter) and its
		// renewTime moves with the wall clock.
		require.Eventually(t, func() bool {
			rt := leaseRenewTime(t, admin, node)
			return !rt.Equal(last) && rt.Sub(clk.Now()).Abs() < 5*time.Second
		}, 20*time.Second, 100*time.Millisecond, "lease renewed after a %v step", step)
		renewed := time.Since(jumped)
		require.Eventually(t, func() bool { return a.Healthy() == nil }, 5*time.Second, 50*time.Millisecond, "healthy after a %v step: %v", step, a.Healthy())
		assert.Equal(t, v1.ConditionTrue, nodeCondition(t, admin, node, v1.NodeReady))
		t.Logf("clock step %v: lease renewed %v later (renewTime on the new wall clock)", step, renewed.Round(time.Millisecond))
	}
	p := getPod(t, admin, "clock-probed")
	assert.Zero(t, p.Status.ContainerStatuses[0].RestartCount, "the probed container was never restarted")
	assert.True(t, strings.HasSuffix(p.Status.ContainerStatuses[0].ContainerID, "://"+id))
}

// TestReferenceAgentFaultRestartMidVolumeSetup: the agent stops while a
// pod's volume setup waits (its configMap does not exist yet); the
// configMap appears while no agent runs; the restarted agent sets the
// volume up once and runs the pod. The pod's volume directory holds the
// configMap's data, nothing else is left under the root directory, and a
// deleted pod's directory is removed.
func TestReferenceAgentFaultRestartMidVolumeSetup(t *testing.T) {
	const node = "fault-volume"
	admin := srv.AdminClient()
	ensureDefaultServiceAccount(t, admin, "default")
	sim := crisim.New(crisim.Config{})
	root := t.TempDir()
	w := &apiWatch{}
	r := startAgent(t, node, sim, root, w)
	pod := simplePod("vol-wait", node, v1.RestartPolicyAlways)
	pod.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "vol-wait-cm"}}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}
	created, err := admin.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
	defer deletePodNow(t, admin, "vol-wait")
	require.Eventually(t, func() bool { return hasEvent(admin, "vol-wait", "FailedMount") }, 45*time.Second, 100*time.Millisecond,
		"volume setup waits for the configMap")
	require.Zero(t, sim.Calls("CreateContainer"), "no container before its volumes")

	require.NoError(t, r.stop(t))
	_, err = admin.CoreV1().ConfigMaps("default").Create(context.Background(), &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "vol-wait-cm"}, Data: map[string]string{"key": "value"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	defer func() {
		_ = admin.CoreV1().ConfigMaps("default").Delete(context.Background(), "vol-wait-cm", metav1.DeleteOptions{})
	}()
	restarted := time.Now()
	r = startAgent(t, node, sim, root, w)
	defer func() { require.NoError(t, r.stop(t)) }()
	runningID(t, admin, "vol-wait")
	converged := time.Since(restarted)
	podDir := filepath.Join(root, "pods", string(created.UID))
	data, err := os.ReadFile(filepath.Join(podDir, "volumes", "kubernetes.io~configmap", "cfg", "key"))
	require.NoError(t, err)
	assert.Equal(t, "value", string(data))
	assert.Equal(t, 1, sim.Calls("CreateContainer"), "one container, created once")
	pods, err := os.ReadDir(filepath.Join(root, "pods"))
	require.NoError(t, err)
	assert.Len(t, pods, 1, "one pod directory")

	grace := int64(0)
	require.NoError(t, admin.CoreV1().Pods("default").Delete(context.Background(), "vol-wait", metav1.DeleteOptions{GracePeriodSeconds: &grace}))
	require.Eventually(t, func() bool {
		_, err := os.Stat(podDir)
		return errors.Is(err, os.ErrNotExist)
	}, 45*time.Second, 100*time.Millisecond, "the deleted pod's directory is removed")
	t.Logf("restart mid volume setup: converged %v after the new agent started", converged.Round(time.Millisecond))
	assert.Empty(t, w.forbiddenExcept("vol-wait"), "403s for the node identity")
}
