package integration

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/nodekit/nodekit/examples/kubelet/agent"
	"github.com/nodekit/nodekit/pleg"
)

// The containerd suite runs when NODEKIT_CONTAINERD_ENDPOINT names a CRI
// endpoint with the image nodekit.local/busybox:1 (make containerd-test
// starts one with hack/containerd-up.sh; it needs root).
const busybox = "nodekit.local/busybox:1"

func containerdEndpoint(t *testing.T) string {
	ep := os.Getenv("NODEKIT_CONTAINERD_ENDPOINT")
	if ep == "" {
		t.Skip("NODEKIT_CONTAINERD_ENDPOINT not set (make containerd-test sets it)")
	}
	return ep
}

// TestPLEGContainerd starts and stops a busybox container in containerd and
// observes the PLEG events.
func TestPLEGContainerd(t *testing.T) {
	ep := containerdEndpoint(t)
	ctx := context.Background()
	rt, err := remote.NewRemoteRuntimeService(ctx, ep, time.Minute, nil, false)
	require.NoError(t, err)
	defer func() { _ = rt.Close(ctx) }()
	g, err := pleg.New(pleg.Config{Runtime: rt})
	require.NoError(t, err)
	_, err = g.Relist(ctx)
	require.NoError(t, err)
	drainEvents(g)

	uid := "pleg-ctd-" + time.Now().Format("150405.000")
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "pleg", Namespace: "default", Uid: uid},
		Labels: map[string]string{pleg.PodUIDLabel: uid}, LogDirectory: t.TempDir(), Linux: &runtimeapi.LinuxPodSandboxConfig{}}
	sb, err := rt.RunPodSandbox(ctx, sbCfg, "")
	require.NoError(t, err)
	defer func() { _ = rt.StopPodSandbox(ctx, sb); _ = rt.RemovePodSandbox(ctx, sb) }()
	id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "sleeper"},
		Image: &runtimeapi.ImageSpec{Image: busybox}, Command: []string{"sleep", "3600"}, LogPath: "sleeper.log",
		Labels: map[string]string{pleg.PodUIDLabel: uid}}, sbCfg)
	require.NoError(t, err)
	require.NoError(t, rt.StartContainer(ctx, id))

	want := func(typ pleg.EventType, data string) {
		t.Helper()
		require.Eventually(t, func() bool {
			_, err := g.Relist(ctx)
			require.NoError(t, err)
			for _, ev := range drainEvents(g) {
				if string(ev.ID) == uid && ev.Type == typ && (data == "" || ev.Data == data) {
					return true
				}
			}
			return false
		}, 30*time.Second, 200*time.Millisecond, "%s %s", typ, data)
	}
	want(pleg.ContainerStarted, id)
	st, err := g.Cache().Get(types.UID(uid))
	require.NoError(t, err)
	require.NotEmpty(t, st.IPs, "the sandbox got an IP from the bridge CNI")
	require.NoError(t, rt.StopContainer(ctx, id, 1))
	want(pleg.ContainerDied, id)
	require.NoError(t, rt.RemoveContainer(ctx, id))
	want(pleg.ContainerRemoved, id)
	ok, err := g.Healthy()
	require.True(t, ok, "%v", err)
}

func drainEvents(g *pleg.Generator) []pleg.PodLifecycleEvent {
	var out []pleg.PodLifecycleEvent
	for {
		select {
		case ev := <-g.Events():
			out = append(out, ev)
		default:
			return out
		}
	}
}

// TestReferenceAgentContainerd runs the reference agent on containerd as a
// node identity: real busybox containers, exec probes, a crash loop, a
// deletion.
func TestReferenceAgentContainerd(t *testing.T) {
	ep := containerdEndpoint(t)
	ctx, cancel := context.WithCancel(context.Background())
	const node = "ctd-node"
	admin := srv.AdminClient()
	ensureDefaultServiceAccount(t, admin, "default")
	a, err := agent.New(ctx, agent.Options{NodeName: node, Kube: srv.NodeConfig(node), RuntimeEndpoint: ep,
		NodeIP: "10.89.0.1", HTTPAddr: "-"})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	eventually := func(msg string, f func() bool) {
		t.Helper()
		require.Eventually(t, f, 60*time.Second, 200*time.Millisecond, msg)
	}
	eventually("node Ready", func() bool { return nodeCondition(t, admin, node, v1.NodeReady) == v1.ConditionTrue })

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ctd-web"}, Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{
		{Name: "sleeper", Image: busybox, Command: []string{"sleep", "3600"},
			LivenessProbe:  &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 2},
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/etc/passwd"}}}, PeriodSeconds: 2}},
		{Name: "crasher", Image: busybox, Command: []string{"sh", "-c", "echo bye; exit 3"}},
	}}}
	_, err = admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	eventually("sleeper Running and Ready with a pod IP; crasher crash-looping", func() bool {
		p := getPod(t, admin, "ctd-web")
		if p == nil || p.Status.PodIP == "" || len(p.Status.ContainerStatuses) != 2 {
			return false
		}
		s, c := p.Status.ContainerStatuses[0], p.Status.ContainerStatuses[1]
		return s.Ready && s.State.Running != nil && c.RestartCount >= 1 &&
			c.LastTerminationState.Terminated != nil && c.LastTerminationState.Terminated.ExitCode == 3
	})
	grace := int64(2)
	require.NoError(t, admin.CoreV1().Pods("default").Delete(ctx, "ctd-web", metav1.DeleteOptions{GracePeriodSeconds: &grace}))
	eventually("deleted pod disappears", func() bool { return getPod(t, admin, "ctd-web") == nil })
}
