package integration

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/examples/kubelet/agent"
)

// runAgent runs the reference agent for node against the harness, on sim,
// until the returned stop func is called.
func runAgent(t testing.TB, node string, sim *crisim.Sim, manifests string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := agent.New(ctx, agent.Options{NodeName: node, Kube: srv.NodeConfig(node), PodManifestPath: manifests,
		Sim: sim, HealthzAddr: "127.0.0.1:0", EvictionHard: "memory.available<500Mi", MemoryCapacity: 4 << 30})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("agent did not stop")
		}
	}
}

func getPod(t *testing.T, cs kubernetes.Interface, name string) *v1.Pod {
	p, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return p
}

func nodeCondition(t *testing.T, cs kubernetes.Interface, node string, ct v1.NodeConditionType) v1.ConditionStatus {
	n, err := cs.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	for _, c := range n.Status.Conditions {
		if c.Type == ct {
			return c.Status
		}
	}
	return ""
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func restarts(p *v1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

// TestReferenceAgentEndToEnd drives the reference agent with the CRI
// simulator and observes it only through the API server.
func TestReferenceAgentEndToEnd(t *testing.T) {
	ctx := context.Background()
	const node = "e2e-node"
	admin := srv.AdminClient()
	ensureDefaultServiceAccount(t, admin, "default")
	var healthy atomic.Bool
	healthy.Store(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	web := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})}
	go func() { _ = web.Serve(ln) }()
	defer web.Close()
	manifests := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(manifests, "static.yaml"), []byte(
		"apiVersion: v1\nkind: Pod\nmetadata: {name: static-web, namespace: default}\nspec:\n  containers: [{name: c, image: busybox}]\n"), 0o644))

	sim := crisim.New(crisim.Config{})
	stop := runAgent(t, node, sim, manifests)
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	eventually := func(msg string, f func() bool) {
		t.Helper()
		require.Eventually(t, f, 45*time.Second, 100*time.Millisecond, msg)
	}

	eventually("node registers and turns Ready", func() bool { return nodeCondition(t, admin, node, v1.NodeReady) == v1.ConditionTrue })
	n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"InPlacePodLevelResourcesVerticalScaling",
		"InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"}, n.Status.DeclaredFeatures,
		"what the v1.36 kubelet declares but ExtendWebSocketsToKubelet (the API server translates WebSocket streams)")
	l, err := admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	first := l.Spec.RenewTime.Time

	limits := v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")}}
	mk := func(name string, ann map[string]string, c v1.Container) *v1.Pod {
		c.Image = "busybox"
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}, Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{c}}}
		_, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		return p
	}
	port := intstr.FromInt32(int32(ln.Addr().(*net.TCPAddr).Port))
	mk("web", nil, v1.Container{Name: "web", Resources: limits,
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Host: "127.0.0.1", Port: port}}, PeriodSeconds: 1},
		LivenessProbe:  &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"check"}}}, PeriodSeconds: 1, FailureThreshold: 1}})
	mk("crasher", map[string]string{crisim.AnnotationScriptPrefix + "app": "exit-after=1s exit-code=1"}, v1.Container{Name: "app", Resources: limits})
	grace := int64(5)
	mk("hog", nil, v1.Container{Name: "hog"})

	eventually("web pod Running with an IP and Ready", func() bool {
		p := getPod(t, admin, "web")
		return p != nil && p.Status.Phase == v1.PodRunning && p.Status.PodIP != "" && podReady(p)
	})
	eventually("static pod gets a mirror pod", func() bool {
		p := getPod(t, admin, "static-web-"+node)
		return p != nil && p.Annotations["kubernetes.io/config.mirror"] != "" && p.Status.Phase == v1.PodRunning
	})

	// Admission: a pod the node cannot hold, and one with a sysctl outside
	// the allowlist, fail with the kubelet's reasons and never reach the
	// runtime.
	mk("too-big", nil, v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("40")}}})
	unsafe := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unsafe-sysctl"}, Spec: v1.PodSpec{NodeName: node,
		SecurityContext: &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}},
		Containers:      []v1.Container{{Name: "c", Image: "busybox"}}}}
	_, err = admin.CoreV1().Pods("default").Create(ctx, unsafe, metav1.CreateOptions{})
	require.NoError(t, err)
	for name, want := range map[string]string{"too-big": "OutOfcpu", "unsafe-sysctl": "SysctlForbidden"} {
		eventually(name+" rejected as "+want, func() bool {
			p := getPod(t, admin, name)
			return p.Status.Phase == v1.PodFailed && p.Status.Reason == want
		})
	}
	require.Contains(t, getPod(t, admin, "too-big").Status.Message, "Node didn't have enough resource: cpu, requested: 40000")
	for _, name := range []string{"too-big", "unsafe-sysctl"} {
		p := getPod(t, admin, name)
		require.Empty(t, p.Status.PodIP, "a rejected pod never gets a sandbox")
		for _, cs := range p.Status.ContainerStatuses {
			require.Empty(t, cs.ContainerID, "a rejected pod never runs a container")
		}
	}

	healthy.Store(false)
	eventually("readiness failure flips Ready", func() bool { p := getPod(t, admin, "web"); return !podReady(p) })
	healthy.Store(true)
	eventually("readiness recovers", func() bool { return podReady(getPod(t, admin, "web")) })

	sim.ScriptExec(crisim.Match{Pod: "web"}, []string{"check"}, crisim.ExecResult{ExitCode: 1})
	eventually("liveness failure restarts the container", func() bool { return restarts(getPod(t, admin, "web")) >= 1 })
	sim.ScriptExec(crisim.Match{Pod: "web"}, []string{"check"}, crisim.ExecResult{})

	eventually("crash loop: restarts grow and CrashLoopBackOff shows", func() bool {
		p := getPod(t, admin, "crasher")
		if p == nil || restarts(p) < 1 {
			return false
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "CrashLoopBackOff"
	})

	hog := getPod(t, admin, "hog")
	require.NotNil(t, hog)
	eventually("hog running", func() bool {
		h := getPod(t, admin, "hog")
		return len(h.Status.ContainerStatuses) > 0 && h.Status.ContainerStatuses[0].ContainerID != ""
	})
	hog = getPod(t, admin, "hog")
	id := hog.Status.ContainerStatuses[0].ContainerID
	require.NoError(t, sim.SetContainerStats(id[strings.Index(id, "://")+3:], crisim.ContainerUsage{MemoryWorkingSetBytes: 3900 << 20, MemoryUsageBytes: 3900 << 20}))
	eventually("memory pressure evicts the BestEffort pod", func() bool {
		h := getPod(t, admin, "hog")
		return h.Status.Phase == v1.PodFailed && h.Status.Reason == "Evicted"
	})
	eventually("node shows MemoryPressure", func() bool { return nodeCondition(t, admin, node, v1.NodeMemoryPressure) == v1.ConditionTrue })
	require.NotEqual(t, v1.PodFailed, getPod(t, admin, "web").Status.Phase, "only the BestEffort pod is evicted")

	require.NoError(t, admin.CoreV1().Pods("default").Delete(ctx, "crasher", metav1.DeleteOptions{GracePeriodSeconds: &grace}))
	eventually("a deleted pod terminates and its object disappears", func() bool { return getPod(t, admin, "crasher") == nil })

	sim.SetCondition(runtimeapi.RuntimeReady, false, "Stopped", "runtime stopped by the test")
	eventually("runtime down → node NotReady", func() bool { return nodeCondition(t, admin, node, v1.NodeReady) == v1.ConditionFalse })
	sim.SetCondition(runtimeapi.RuntimeReady, true, "", "")
	eventually("runtime back → node Ready", func() bool { return nodeCondition(t, admin, node, v1.NodeReady) == v1.ConditionTrue })

	l, err = admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	require.True(t, l.Spec.RenewTime.After(first), "lease renewed")

	// Restart the agent: running pods are adopted, not restarted.
	before := getPod(t, admin, "web")
	stop()
	stopped = true
	stop2 := runAgent(t, node, sim, manifests)
	defer stop2()
	require.Never(t, func() bool {
		p := getPod(t, admin, "web")
		return restarts(p) != restarts(before) || p.Status.ContainerStatuses[0].ContainerID != before.Status.ContainerStatuses[0].ContainerID
	}, 5*time.Second, 200*time.Millisecond, "a running container is adopted, not restarted")
	after := getPod(t, admin, "web")
	require.Equal(t, restarts(before), restarts(after), "no restart after the agent restarted")
	require.Equal(t, before.Status.ContainerStatuses[0].ContainerID, after.Status.ContainerStatuses[0].ContainerID)
	require.True(t, podReady(after))
}
