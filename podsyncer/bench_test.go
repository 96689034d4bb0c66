package podsyncer

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/podstatus"
)

// benchPod is a running pod as most syncs see it: an init container done,
// a sidecar and an app container running.
func benchPod() (*v1.Pod, *podRuntime) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1", Generation: 1},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways,
			InitContainers: []v1.Container{{Name: "init", Image: "busybox"}, {Name: "side", Image: "proxy", RestartPolicy: &always}},
			Containers:     []v1.Container{{Name: "app", Image: "nginx"}}},
		Status: v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}}}}
	base := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC).UnixNano()
	ctr := func(id, name string, state runtimeapi.ContainerState, finished int64) *runtimeapi.ContainerStatus {
		return &runtimeapi.ContainerStatus{Id: id, Metadata: &runtimeapi.ContainerMetadata{Name: name}, State: state,
			StartedAt: base, FinishedAt: finished, ImageRef: "sha256:" + name}
	}
	rtp := &podRuntime{sandboxes: []*runtimeapi.PodSandbox{{Id: "sb1", State: runtimeapi.PodSandboxState_SANDBOX_READY}}, sandboxIPs: []string{"10.0.0.5"},
		containers: []*runtimeapi.ContainerStatus{ctr("c3", "app", runtimeapi.ContainerState_CONTAINER_RUNNING, 0),
			ctr("c2", "side", runtimeapi.ContainerState_CONTAINER_RUNNING, 0), ctr("c1", "init", runtimeapi.ContainerState_CONTAINER_EXITED, base)}}
	return pod, rtp
}

// BenchmarkStatusWrite is the status computation of every sync of a
// running pod (each resync, each PLEG event), written to the status cache
// (unchanged after the first).
func BenchmarkStatusWrite(b *testing.B) {
	clk := testclock.NewFakeClock(time.Date(2026, 11, 25, 10, 1, 0, 0, time.UTC))
	mgr, err := podstatus.New(podstatus.Config{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	w := &statusWriter{mgr: mgr, clock: clk, runtimeName: "containerd", backoff: newCrashBackoff(clk),
		hostIPs: func() []string { return []string{"192.0.2.2"} }, probes: readyWhenRunning{}}
	pod, rtp := benchPod()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		w.write(ctx, pod, rtp, nil, false)
	}
}

// BenchmarkPlan is the action plan of every sync of a running pod.
func BenchmarkPlan(b *testing.B) {
	s := &Syncer{}
	pod, rtp := benchPod()
	b.ReportAllocs()
	for b.Loop() {
		if p := s.plan(pod, rtp); p.Acts() {
			b.Fatal("a running pod needs nothing")
		}
	}
}
