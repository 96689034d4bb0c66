package integration

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/examples/kubelet/agent"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/podsyncer"
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
				if string(ev.ID) == uid && ev.Type == typ && (data == "" || ev.ContainerID.ID == data) {
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
	require.NoError(t, g.Healthy())
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
	const node = "ctd-node"
	ctx, _ := runContainerdAgent(t, node, nil)
	admin := srv.AdminClient()
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
	_, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	eventually("sleeper Running and Ready with a pod IP; crasher crash-looping", func() bool {
		p := getPod(t, admin, "ctd-web")
		if p == nil || p.Status.PodIP == "" || len(p.Status.ContainerStatuses) != 2 {
			return false
		}
		// Statuses are sorted by name, as the kubelet's status manager sorts them.
		c, s := p.Status.ContainerStatuses[0], p.Status.ContainerStatuses[1]
		if c.Name != "crasher" || s.Name != "sleeper" {
			t.Fatalf("container statuses not sorted by name: %s, %s", c.Name, s.Name)
		}
		return s.Ready && s.State.Running != nil && c.RestartCount >= 1 &&
			c.LastTerminationState.Terminated != nil && c.LastTerminationState.Terminated.ExitCode == 3
	})
	grace := int64(2)
	require.NoError(t, admin.CoreV1().Pods("default").Delete(ctx, "ctd-web", metav1.DeleteOptions{GracePeriodSeconds: &grace}))
	eventually("deleted pod disappears", func() bool { return getPod(t, admin, "ctd-web") == nil })
}

// TestReferenceAgentVolumesContainerd runs a real container that reads
// every kind of volume the agent provides and env from a configMap, sees a
// configMap update arrive in the running container, and checks that the
// tmpfs and the pod directory are gone after deletion.
func TestReferenceAgentVolumesContainerd(t *testing.T) {
	const node = "ctd-vol-node"
	ctx, opts := runContainerdAgent(t, node, nil)
	admin := srv.AdminClient()
	root, logs := opts.RootDir, opts.PodLogsDir
	eventually := func(msg string, f func() bool) {
		t.Helper()
		require.Eventually(t, f, 90*time.Second, 250*time.Millisecond, msg)
	}
	cms := admin.CoreV1().ConfigMaps("default")
	_, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ctd-cfg"}, Data: map[string]string{"key": "v1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.CoreV1().Secrets("default").Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ctd-sec"},
		Data: map[string][]byte{"pw": []byte("s3cret")}}, metav1.CreateOptions{})
	require.NoError(t, err)

	size := resource.MustParse("16Mi")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ctd-vol", Labels: map[string]string{"app": "vol"}}, Spec: v1.PodSpec{
		NodeName: node,
		Volumes: []v1.Volume{
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "ctd-cfg"}}}},
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "ctd-sec"}}},
			{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
			{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &size}}},
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		},
		Containers: []v1.Container{{Name: "reader", Image: busybox,
			Env: []v1.EnvVar{{Name: "FROM_CM", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
				LocalObjectReference: v1.LocalObjectReference{Name: "ctd-cfg"}, Key: "key"}}}},
			Command: []string{"sh", "-c", "echo cfg=$(cat /etc/cfg/key) sec=$(cat /etc/sec/pw) labels=$(cat /etc/info/labels) env=$FROM_CM; " +
				"grep -q ' /mnt/mem tmpfs ' /proc/mounts && echo mem=tmpfs; echo hi > /mnt/sub/f && echo sub=ok; " +
				"test -s /var/run/secrets/kubernetes.io/serviceaccount/token && echo token=ok; sleep 3600"},
			VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}, {Name: "sec", MountPath: "/etc/sec"},
				{Name: "info", MountPath: "/etc/info"}, {Name: "mem", MountPath: "/mnt/mem"},
				{Name: "scratch", MountPath: "/mnt/sub", SubPath: "a/b"}},
		}},
	}}
	created, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	logFile := filepath.Join(podsyncer.PodLogDir(logs, created), "reader", "0.log")
	want := []string{`cfg=v1 sec=s3cret labels=app="vol" env=v1`, "mem=tmpfs", "sub=ok", "token=ok"}
	eventually("the container prints every volume's content", func() bool {
		b, err := os.ReadFile(logFile)
		if err != nil {
			return false
		}
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				return false
			}
		}
		return true
	})
	podDir := filepath.Join(root, "pods", string(created.UID))
	assert.FileExists(t, filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "scratch", "a", "b", "f"))

	// A configMap update reaches the running container.
	rt, err := remote.NewRemoteRuntimeService(ctx, opts.RuntimeEndpoint, time.Minute, nil, false)
	require.NoError(t, err)
	defer func() { _ = rt.Close(ctx) }()
	cm, err := cms.Get(ctx, "ctd-cfg", metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data["key"] = "v2"
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually("the update is in the volume (next sync: within about a minute)", func() bool {
		cs, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(created.UID)}})
		if err != nil || len(cs) == 0 {
			return false
		}
		out, _, err := rt.ExecSync(ctx, cs[0].Id, []string{"cat", "/etc/cfg/key"}, 10*time.Second)
		return err == nil && string(out) == "v2"
	})

	grace := int64(1)
	require.NoError(t, admin.CoreV1().Pods("default").Delete(ctx, "ctd-vol", metav1.DeleteOptions{GracePeriodSeconds: &grace}))
	eventually("deleted pod disappears", func() bool { return getPod(t, admin, "ctd-vol") == nil })
	eventually("its directory and mounts are gone", func() bool {
		_, err := os.Stat(podDir)
		mi, _ := os.ReadFile("/proc/self/mountinfo")
		return os.IsNotExist(err) && !strings.Contains(string(mi), podDir)
	})
}

// TestReferenceAgentLifecycleContainerd runs a pod with a sidecar (a
// restartable init container gated by a startup probe), an init container,
// and an app container with a postStart hook that writes its termination
// message and fails: the init container sees the started sidecar, the app
// sees both and the hook's file, the pod fails with the app's message, and
// the sidecar is stopped after it.
func TestReferenceAgentLifecycleContainerd(t *testing.T) {
	const node = "ctd-life-node"
	ctx, opts := runContainerdAgent(t, node, nil)
	admin := srv.AdminClient()
	root := opts.RootDir
	eventually := func(msg string, f func() bool) {
		t.Helper()
		require.Eventually(t, f, 90*time.Second, 250*time.Millisecond, msg)
	}
	always := v1.ContainerRestartPolicyAlways
	shared := []v1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ctd-life"}, Spec: v1.PodSpec{
		NodeName: node, RestartPolicy: v1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To[int64](2),
		Volumes: []v1.Volume{{Name: "shared", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		InitContainers: []v1.Container{
			{Name: "side", Image: busybox, RestartPolicy: &always, VolumeMounts: shared,
				Command: []string{"sh", "-c", "sleep 1; echo side > /shared/side; exec sleep 3600"},
				StartupProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"test", "-f", "/shared/side"}}},
					PeriodSeconds: 1, FailureThreshold: 30}},
			{Name: "setup", Image: busybox, VolumeMounts: shared,
				Command: []string{"sh", "-c", "test -f /shared/side && echo init-saw-side >> /shared/log"}},
		},
		Containers: []v1.Container{{Name: "app", Image: busybox, VolumeMounts: shared,
			Command:                []string{"sh", "-c", "sleep 2; cat /shared/log /shared/poststart > /dev/termination-log; exit 3"},
			TerminationMessagePath: "/dev/termination-log",
			Lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{
				Command: []string{"sh", "-c", "echo hook-ran > /shared/poststart"}}}},
		}},
	}}
	created, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	eventually("the pod fails with the app's termination message, the sidecar stopped after it", func() bool {
		p := getPod(t, admin, "ctd-life")
		if p == nil || p.Status.Phase != v1.PodFailed || len(p.Status.InitContainerStatuses) != 2 || len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		app := p.Status.ContainerStatuses[0].State.Terminated
		side := p.Status.InitContainerStatuses[0].State.Terminated
		setup := p.Status.InitContainerStatuses[1].State.Terminated
		return app != nil && app.ExitCode == 3 && app.Message == "init-saw-side\nhook-ran\n" &&
			setup != nil && setup.ExitCode == 0 && side != nil && !side.FinishedAt.Before(&app.FinishedAt)
	})
	grace := int64(1)
	require.NoError(t, admin.CoreV1().Pods("default").Delete(ctx, "ctd-life", metav1.DeleteOptions{GracePeriodSeconds: &grace}))
	eventually("deleted pod disappears", func() bool { return getPod(t, admin, "ctd-life") == nil })
	eventually("its volumes are torn down", func() bool {
		_, err := os.Stat(filepath.Join(root, "pods", string(created.UID)))
		return os.IsNotExist(err)
	})
}

// cgroupRoot is a cgroup root of the test's own, so that the agent's pod
// cgroup housekeeping never meets another agent's pods on this machine;
// removed (deepest first) when the test ends.
// runContainerdAgent runs the reference agent for node on the containerd
// of NODEKIT_CONTAINERD_ENDPOINT (the test is skipped without it), with a
// root, log and cgroup directory of its own; adjust, if set, edits the
// options first. The agent stops when the test ends; the returned context
// ends with it.
func runContainerdAgent(t *testing.T, node string, adjust func(*agent.Options)) (context.Context, agent.Options) {
	t.Helper()
	ep := containerdEndpoint(t)
	ensureDefaultServiceAccount(t, srv.AdminClient(), "default")
	opts := agent.Options{NodeName: node, Kube: srv.NodeConfig(node), RuntimeEndpoint: ep, NodeIP: "10.89.0.1", HealthzAddr: "-",
		CgroupRoot: cgroupRoot(t), RootDir: t.TempDir(), PodLogsDir: t.TempDir()}
	if adjust != nil {
		adjust(&opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := agent.New(ctx, opts)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return ctx, opts
}

func cgroupRoot(t *testing.T) string {
	root := fmt.Sprintf("/nodekit-test-%d-%s", os.Getpid(), strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	t.Cleanup(func() {
		hierarchies := []string{"/sys/fs/cgroup"}
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
			hierarchies, _ = filepath.Glob("/sys/fs/cgroup/*")
		}
		for _, h := range hierarchies {
			var dirs []string
			_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			for i := len(dirs) - 1; i >= 0; i-- {
				_ = syscall.Rmdir(dirs[i])
			}
		}
	})
	return root
}

// TestReferenceAgentCgroupsContainerd runs a Burstable pod with limits in
// containerd and checks its pod cgroup on the host (under the QoS tier,
// sized from the pod), the limits its container sees from inside, an
// in-place resize reaching both, and that the pod cgroup goes with the pod.
func TestReferenceAgentCgroupsContainerd(t *testing.T) {
	const node = "ctd-cg-node"
	ctx, opts := runContainerdAgent(t, node, nil)
	admin := srv.AdminClient()
	root, cgRoot := opts.RootDir, opts.CgroupRoot
	eventually := func(msg string, f func() bool) {
		t.Helper()
		require.Eventually(t, f, 90*time.Second, 250*time.Millisecond, msg)
	}
	v2 := false
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		v2 = true
	}
	res := v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("32Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")},
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ctd-cg"}, Spec: v1.PodSpec{
		NodeName: node, TerminationGracePeriodSeconds: ptr.To[int64](1),
		Volumes: []v1.Volume{{Name: "out", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		Containers: []v1.Container{{Name: "app", Image: busybox, Resources: res,
			VolumeMounts: []v1.VolumeMount{{Name: "out", MountPath: "/out"}},
			Command: []string{"sh", "-c", "while true; do { cat /sys/fs/cgroup/memory.max || cat /sys/fs/cgroup/memory/memory.limit_in_bytes; " +
				"cat /sys/fs/cgroup/cpu.max || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us; } > /out/.cg 2>/dev/null; mv /out/.cg /out/cg; sleep 0.3; done"}}},
	}}
	created, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	out := filepath.Join(root, "pods", string(created.UID), "volumes", "kubernetes.io~empty-dir", "out", "cg")
	want := "67108864\n50000\n"
	if v2 {
		want = "67108864\n50000 100000\n"
	}
	eventually("the container reports its own memory and CPU limits", func() bool { b, _ := os.ReadFile(out); return string(b) == want })

	podCg := filepath.Join(cgRoot, "kubepods", "burstable", "pod"+string(created.UID))
	read := func(parts ...string) string {
		b, err := os.ReadFile(filepath.Join(parts...))
		require.NoError(t, err)
		return strings.TrimSpace(string(b))
	}
	if v2 {
		assert.Equal(t, "67108864", read("/sys/fs/cgroup", podCg, "memory.max"))
		assert.Equal(t, "50000 100000", read("/sys/fs/cgroup", podCg, "cpu.max"))
	} else {
		assert.Equal(t, "67108864", read("/sys/fs/cgroup/memory", podCg, "memory.limit_in_bytes"), "pod memory limit: every container has one")
		assert.Equal(t, "50000", read("/sys/fs/cgroup/cpu", podCg, "cpu.cfs_quota_us"))
		assert.Equal(t, "102", read("/sys/fs/cgroup/cpu", podCg, "cpu.shares"))
		assert.Equal(t, "102", read("/sys/fs/cgroup/cpu", cgRoot, "kubepods", "burstable", "cpu.shares"), "the burstable tier follows its pods' requests")
	}
	// In-place resize: more CPU and memory, without a restart.
	patch := `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"200m","memory":"32Mi"},"limits":{"cpu":"750m","memory":"96Mi"}}}]}}`
	_, err = admin.CoreV1().Pods("default").Patch(ctx, "ctd-cg", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
	require.NoError(t, err)
	eventually("the resize is actuated and reported", func() bool {
		p := getPod(t, admin, "ctd-cg")
		if p == nil || len(p.Status.ContainerStatuses) != 1 || p.Status.ObservedGeneration < p.Generation {
			return false
		}
		cs := p.Status.ContainerStatuses[0]
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodResizePending || c.Type == v1.PodResizeInProgress {
				return false
			}
		}
		return cs.Resources != nil && cs.Resources.Limits.Cpu().MilliValue() == 750 && cs.Resources.Limits.Memory().Value() == 96<<20 &&
			cs.AllocatedResources.Cpu().MilliValue() == 200 && cs.RestartCount == 0
	})
	want = "100663296\n75000\n"
	if v2 {
		want = "100663296\n75000 100000\n"
	}
	eventually("the container sees its new limits", func() bool { b, _ := os.ReadFile(out); return string(b) == want })
	if v2 {
		assert.Equal(t, "75000 100000", read("/sys/fs/cgroup", podCg, "cpu.max"))
	} else {
		assert.Equal(t, "100663296", read("/sys/fs/cgroup/memory", podCg, "memory.limit_in_bytes"), "the pod cgroup follows")
		assert.Equal(t, "75000", read("/sys/fs/cgroup/cpu", podCg, "cpu.cfs_quota_us"))
		assert.Equal(t, "204", read("/sys/fs/cgroup/cpu", podCg, "cpu.shares"))
	}

	hierarchy := "/sys/fs/cgroup/memory"
	if v2 {
		hierarchy = "/sys/fs/cgroup"
	}
	require.NoError(t, admin.CoreV1().Pods("default").Delete(ctx, "ctd-cg", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}))
	eventually("deleted pod disappears", func() bool { return getPod(t, admin, "ctd-cg") == nil })
	eventually("its pod cgroup is removed", func() bool {
		_, err := os.Stat(filepath.Join(hierarchy, podCg))
		return os.IsNotExist(err)
	})
}

// TestReferenceAgentContainerSpecContainerd runs a container whose user,
// groups, privileges, capabilities, hosts file, DNS and environment all
// come from its spec, and checks what the process sees from inside.
func TestReferenceAgentContainerSpecContainerd(t *testing.T) {
	const node = "ctd-spec-node"
	ctx, opts := runContainerdAgent(t, node, func(o *agent.Options) { o.ClusterDomain, o.ClusterDNS = "cluster.local", []string{"10.96.0.10"} })
	admin := srv.AdminClient()
	root := opts.RootDir
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ctd-spec"}, Spec: v1.PodSpec{
		NodeName: node, RestartPolicy: v1.RestartPolicyNever, Hostname: "web-0", Subdomain: "web",
		HostAliases: []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"db.example"}}},
		DNSConfig:   &v1.PodDNSConfig{Searches: []string{"extra.example"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}}},
		SecurityContext: &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](2000),
			SupplementalGroups: []int64{3000}},
		Volumes: []v1.Volume{{Name: "out", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		Containers: []v1.Container{{Name: "app", Image: busybox,
			VolumeMounts: []v1.VolumeMount{{Name: "out", MountPath: "/out"}},
			SecurityContext: &v1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
				Capabilities: &v1.Capabilities{Drop: []v1.Capability{"ALL"}, Add: []v1.Capability{"NET_BIND_SERVICE"}}},
			Env: []v1.EnvVar{{Name: "GREETING", Value: "hello"},
				{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "MESSAGE", Value: "$(GREETING) from $(POD_NAME), not $(LATER)"}, {Name: "LATER", Value: "x"}},
			Command: []string{"sh", "-c", "{ id; grep -E '^(NoNewPrivs|CapBnd)' /proc/self/status; cat /etc/hosts /etc/resolv.conf; " +
				"echo \"msg=$MESSAGE\"; hostname; } > /out/.spec; mv /out/.spec /out/spec"}}},
	}}
	created, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	out := filepath.Join(root, "pods", string(created.UID), "volumes", "kubernetes.io~empty-dir", "out", "spec")
	require.Eventually(t, func() bool { _, err := os.Stat(out); return err == nil }, 90*time.Second, 250*time.Millisecond, "the container reports")
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	got := string(b)
	assert.Contains(t, got, "uid=1000 gid=2000 groups=2000,3000", "user, group and supplemental groups")
	assert.Regexp(t, `NoNewPrivs:\s+1`, got, "allowPrivilegeEscalation: false")
	assert.Regexp(t, `CapBnd:\s+0000000000000400`, got, "ALL dropped, NET_BIND_SERVICE added")
	assert.Regexp(t, `10\.1\.2\.3\s+db\.example`, got, "hostAliases in the kubelet's /etc/hosts")
	assert.Regexp(t, `\S+\s+web-0\.web\.default\.svc\.cluster\.local\s+web-0`, got, "the pod's own FQDN line")
	assert.Contains(t, got, "nameserver 10.96.0.10", "ClusterFirst uses --cluster-dns")
	assert.Contains(t, got, "search default.svc.cluster.local svc.cluster.local cluster.local extra.example")
	assert.Contains(t, got, "options ndots:2")
	assert.Contains(t, got, "msg=hello from ctd-spec, not $(LATER)", "$(VAR) expansion of earlier variables, a fieldRef among them")
	assert.Contains(t, got, "\nweb-0\n", "hostname")

	require.NoError(t, admin.CoreV1().Pods("default").Delete(ctx, "ctd-spec", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(root, "pods", string(created.UID)))
		return os.IsNotExist(err)
	}, 90*time.Second, 250*time.Millisecond, "its volumes are torn down")
}
