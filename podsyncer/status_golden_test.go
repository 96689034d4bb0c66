package podsyncer

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/podstatus"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/status")

// TestStatusGolden generates pod statuses from runtime states and compares
// them with testdata/status/<case>.json (go test -run TestStatusGolden
// -update rewrites them; review the diff).
func TestStatusGolden(t *testing.T) {
	base := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	at := func(s int) int64 { return base.Add(time.Duration(s) * time.Second).UnixNano() }
	always := v1.ContainerRestartPolicyAlways
	ctr := func(id, name string, attempt uint32, state runtimeapi.ContainerState, started, finished int64, exit int32) *runtimeapi.ContainerStatus {
		return &runtimeapi.ContainerStatus{Id: id, Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt}, State: state,
			StartedAt: started, FinishedAt: finished, ExitCode: exit, ImageRef: "sha256:" + name,
			User: &runtimeapi.ContainerUser{Linux: &runtimeapi.LinuxContainerUser{Uid: 1000, Gid: 1000, SupplementalGroups: []int64{1000, 2000}}}}
	}
	running, exited := runtimeapi.ContainerState_CONTAINER_RUNNING, runtimeapi.ContainerState_CONTAINER_EXITED
	sandbox := []*runtimeapi.PodSandbox{{Id: "sb1", State: runtimeapi.PodSandboxState_SANDBOX_READY}}
	stopped := []*runtimeapi.PodSandbox{{Id: "sb1", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}}
	withIPs := func(p *v1.Pod, ip string) *v1.Pod {
		p.Status.PodIP, p.Status.PodIPs = ip, []v1.PodIP{{IP: ip}}
		return p
	}
	pod := func(policy v1.RestartPolicy, gates ...v1.PodConditionType) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1", Generation: 2},
			Spec: v1.PodSpec{RestartPolicy: policy,
				InitContainers: []v1.Container{{Name: "init", Image: "busybox"}, {Name: "side", Image: "proxy", RestartPolicy: &always}},
				Containers: []v1.Container{{Name: "app", Image: "nginx", VolumeMounts: []v1.VolumeMount{
					{Name: "data", MountPath: "/data"},
					{Name: "cfg", MountPath: "/etc/cfg", ReadOnly: true, RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyIfPossible)}}}}},
			Status: v1.PodStatus{QOSClass: v1.PodQOSBestEffort, Conditions: []v1.PodCondition{
				{Type: v1.PodScheduled, Status: v1.ConditionTrue}, {Type: "example.com/other", Status: v1.ConditionTrue}}}}
		for _, g := range gates {
			p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, v1.PodReadinessGate{ConditionType: g})
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		rtp  *podRuntime
		// crashed marks the app container as in its restart back-off.
		crashed bool
	}{
		{name: "pending", pod: pod(v1.RestartPolicyAlways), rtp: &podRuntime{}},
		{name: "initializing", pod: pod(v1.RestartPolicyAlways), rtp: &podRuntime{sandboxes: sandbox, sandboxIPs: []string{"10.0.0.5"},
			containers: []*runtimeapi.ContainerStatus{ctr("c1", "init", 0, running, at(1), 0, 0)}}},
		{name: "running-gated", pod: pod(v1.RestartPolicyAlways, "example.com/lb"), rtp: &podRuntime{sandboxes: sandbox, sandboxIPs: []string{"10.0.0.5"},
			containers: []*runtimeapi.ContainerStatus{
				ctr("c3", "app", 0, running, at(5), 0, 0), ctr("c2", "side", 0, running, at(3), 0, 0), ctr("c1", "init", 0, exited, at(1), at(2), 0)}}},
		{name: "crashloop", pod: pod(v1.RestartPolicyAlways), crashed: true, rtp: &podRuntime{sandboxes: sandbox, sandboxIPs: []string{"10.0.0.5"},
			containers: []*runtimeapi.ContainerStatus{
				ctr("c5", "app", 2, exited, at(20), at(21), 1), ctr("c4", "app", 1, exited, at(10), at(11), 1),
				ctr("c2", "side", 0, running, at(3), 0, 0), ctr("c1", "init", 0, exited, at(1), at(2), 0)}}},
		{name: "succeeded", pod: pod(v1.RestartPolicyNever), rtp: &podRuntime{sandboxes: sandbox, sandboxIPs: []string{"10.0.0.5"},
			containers: []*runtimeapi.ContainerStatus{
				ctr("c3", "app", 0, exited, at(5), at(9), 0), ctr("c2", "side", 0, exited, at(3), at(10), 137), ctr("c1", "init", 0, exited, at(1), at(2), 0)}}},
		{name: "dual-stack", pod: pod(v1.RestartPolicyAlways), rtp: &podRuntime{sandboxes: sandbox, sandboxIPs: []string{"fd00::5", "10.0.0.5", "10.0.0.6"},
			containers: []*runtimeapi.ContainerStatus{
				ctr("c3", "app", 0, running, at(5), 0, 0), ctr("c2", "side", 0, running, at(3), 0, 0), ctr("c1", "init", 0, exited, at(1), at(2), 0)}}},
		{name: "completed-stopped", pod: withIPs(pod(v1.RestartPolicyNever), "10.0.0.5"), rtp: &podRuntime{sandboxes: stopped,
			containers: []*runtimeapi.ContainerStatus{
				ctr("c3", "app", 0, exited, at(5), at(9), 0), ctr("c2", "side", 0, exited, at(3), at(10), 137), ctr("c1", "init", 0, exited, at(1), at(2), 0)}}},
		{name: "init-failed", pod: pod(v1.RestartPolicyNever), rtp: &podRuntime{sandboxes: sandbox, sandboxIPs: []string{"10.0.0.5"},
			containers: []*runtimeapi.ContainerStatus{ctr("c1", "init", 0, exited, at(1), at(2), 3)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testclock.NewFakeClock(base.Add(30 * time.Second))
			mgr, err := podstatus.New(podstatus.Config{Clock: clk})
			require.NoError(t, err)
			backoff := newCrashBackoff(clk)
			if tc.crashed {
				backoff.next(backoffKey(tc.pod, &tc.pod.Spec.Containers[0]), time.Unix(0, at(21)))
			}
			w := &statusWriter{mgr: mgr, clock: clk, runtimeName: "containerd", backoff: backoff,
				hostIPs: func() []string { return []string{"192.0.2.2", "2001:db8::2"} },
				probes:  readyWhenRunning{}}
			w.write(context.Background(), tc.pod, tc.rtp, nil, false)
			got, ok := mgr.PodStatus(tc.pod.UID)
			require.True(t, ok)
			data, err := json.MarshalIndent(got, "", "  ")
			require.NoError(t, err)
			data = append(data, '\n')
			file := filepath.Join("testdata", "status", tc.name+".json")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
				require.NoError(t, os.WriteFile(file, data, 0o644))
			}
			want, err := os.ReadFile(file)
			require.NoError(t, err, "run with -update to create it")
			assert.Equal(t, string(want), string(data))
		})
	}
}

// readyWhenRunning is a prober whose readiness probes pass for every
// running container.
type readyWhenRunning struct{}

func (readyWhenRunning) ContainerState(*v1.Pod, string, string) (bool, bool, bool) {
	return true, false, false
}

func (readyWhenRunning) StopLivenessAndStartup(*v1.Pod) {}

func (readyWhenRunning) UpdatePodStatus(_ context.Context, _ *v1.Pod, s *v1.PodStatus) {
	for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
		for i := range list {
			list[i].Ready = list[i].State.Running != nil
		}
	}
}
