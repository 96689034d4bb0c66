package podsyncer

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/cgroups"
)

func reqs(kv ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func TestWidest(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cur, want cgroups.Resources
		widest    cgroups.Resources
	}{
		{"grow", cgroups.Resources{CPUQuota: 10000, Memory: 100}, cgroups.Resources{CPUShares: 20, CPUQuota: 20000, Memory: 200, CPUPeriod: 100000},
			cgroups.Resources{CPUShares: 20, CPUQuota: 20000, Memory: 200, CPUPeriod: 100000}},
		{"shrink keeps the old limits until the containers shrank", cgroups.Resources{CPUQuota: 20000, Memory: 200}, cgroups.Resources{CPUShares: 10, CPUQuota: 10000, Memory: 100},
			cgroups.Resources{CPUShares: 10, CPUQuota: 20000, Memory: 200}},
		{"unlimited stays unlimited in between", cgroups.Resources{CPUQuota: -1, Memory: -1}, cgroups.Resources{CPUQuota: 5000, Memory: 50},
			cgroups.Resources{CPUQuota: -1, Memory: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.widest, widest(tc.cur, tc.want)) })
	}
}

func TestResizeNeedsRestart(t *testing.T) {
	restartMem := []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired}, {ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	running := v1.ResourceRequirements{Requests: reqs("cpu", "100m", "memory", "64Mi"), Limits: reqs("cpu", "200m", "memory", "128Mi")}
	for _, tc := range []struct {
		name   string
		policy []v1.ContainerResizePolicy
		res    v1.ResourceRequirements
		want   bool
	}{
		{"cpu change, cpu NotRequired", restartMem, v1.ResourceRequirements{Requests: reqs("cpu", "150m", "memory", "64Mi"), Limits: reqs("cpu", "300m", "memory", "128Mi")}, false},
		{"memory limit change, memory RestartContainer", restartMem, v1.ResourceRequirements{Requests: reqs("cpu", "100m", "memory", "64Mi"), Limits: reqs("cpu", "200m", "memory", "256Mi")}, true},
		{"equivalent quantities", restartMem, v1.ResourceRequirements{Requests: reqs("cpu", "0.1", "memory", "64Mi"), Limits: reqs("cpu", "200m", "memory", "134217728")}, false},
		{"memory change, default policy", nil, v1.ResourceRequirements{Requests: reqs("cpu", "100m", "memory", "32Mi"), Limits: reqs("cpu", "200m", "memory", "128Mi")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1.Container{Name: "c", ResizePolicy: tc.policy, Resources: tc.res}
			assert.Equal(t, tc.want, resizeNeedsRestart(c, running, tc.res))
		})
	}
	assert.True(t, sameResources(running, *running.DeepCopy()))
	assert.False(t, sameResources(running, v1.ResourceRequirements{Requests: running.Requests}))
}

// A container without its own CPU or memory limit runs with the pod-level
// one, and its status reports only what it sets itself.
func TestEffectiveResources(t *testing.T) {
	own := v1.ResourceRequirements{Requests: reqs("cpu", "100m"), Limits: reqs("memory", "64Mi")}
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: own}}}}
	c := &pod.Spec.Containers[0]
	assert.Equal(t, own, effectiveResources(pod, c), "no pod-level resources")

	pod.Spec.Resources = &v1.ResourceRequirements{Requests: reqs("cpu", "200m", "memory", "128Mi"), Limits: reqs("cpu", "400m", "memory", "256Mi")}
	eff := effectiveResources(pod, c)
	assert.Equal(t, v1.ResourceRequirements{Requests: reqs("cpu", "100m"), Limits: reqs("cpu", "400m", "memory", "64Mi")}, eff,
		"the pod's CPU limit stands in; the container's own memory limit wins")
	assert.Equal(t, reqs("memory", "64Mi"), c.Resources.Limits, "the spec is not modified")
	assert.Equal(t, own, ownResources(c, eff), "the status reports the container's own")

	r := containerResources(pod, c, v1.PodQOSBurstable, 0)
	assert.Equal(t, int64(40000), r.CpuQuota)
	assert.Equal(t, int64(64<<20), r.MemoryLimitInBytes)
}

func TestSandboxConfigCgroup(t *testing.T) {
	mnt := t.TempDir()
	for _, h := range []string{"cpu", "memory"} {
		require.NoError(t, os.MkdirAll(filepath.Join(mnt, h), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(mnt, h, "cgroup.procs"), nil, 0o644))
	}
	cg, err := cgroups.New(cgroups.Config{Mount: mnt})
	require.NoError(t, err)
	s := &Syncer{cgroups: cg, logsDir: "/var/log/pods"}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}, Spec: v1.PodSpec{
		Overhead: reqs("cpu", "100m", "memory", "32Mi"),
		Containers: []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{Requests: reqs("cpu", "250m"), Limits: reqs("cpu", "500m", "memory", "128Mi")}},
			{Name: "b", Resources: v1.ResourceRequirements{Requests: reqs("cpu", "250m"), Limits: reqs("cpu", "500m", "memory", "128Mi")}}},
	}}
	cfg, err := s.sandboxConfig(context.Background(), pod, "", 0, false)
	require.NoError(t, err)
	assert.Equal(t, "/kubepods/burstable/podu1", cfg.Linux.CgroupParent)
	assert.Equal(t, &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, CpuQuota: 100000, MemoryLimitInBytes: 256 << 20},
		cfg.Linux.Resources, "the pod's sums, without overhead")
	assert.Equal(t, &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, CpuQuota: 10000, MemoryLimitInBytes: 32 << 20},
		cfg.Linux.Overhead)

	s.cgroups = nil
	cfg, err = s.sandboxConfig(context.Background(), pod, "", 0, false)
	require.NoError(t, err)
	assert.Empty(t, cfg.Linux.CgroupParent, "without pod cgroups the runtime picks")
}

func TestPortMappings(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{
		{Name: "a", Ports: []v1.ContainerPort{
			{Name: "http", ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP},
			{Name: "http", ContainerPort: 81, Protocol: v1.ProtocolTCP}, // same name: dropped
			{ContainerPort: 53, HostPort: 5353, HostIP: "fd00::1", Protocol: v1.ProtocolUDP},
		}},
		{Name: "b", Ports: []v1.ContainerPort{{ContainerPort: 9000, Protocol: v1.ProtocolSCTP}}},
	}}}
	assert.Equal(t, []*runtimeapi.PortMapping{
		{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: 8080},
		{Protocol: runtimeapi.Protocol_UDP, ContainerPort: 53, HostPort: 5353, HostIp: "fd00::1"},
		{Protocol: runtimeapi.Protocol_SCTP, ContainerPort: 9000},
	}, portMappings(pod))
	assert.Nil(t, portMappings(&v1.Pod{}))
}

func TestCrashBackoffCountsFromExit(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	b := newCrashBackoff(clk)
	exit := clk.Now()
	wait, _ := b.inBackoff("k", exit)
	assert.False(t, wait, "the first restart is immediate")
	b.next("k", exit)

	// The next instance ran 5s and exited: 10s from that exit.
	clk.Step(5 * time.Second)
	exit = clk.Now()
	wait, until := b.inBackoff("k", exit)
	assert.True(t, wait)
	assert.Equal(t, exit.Add(10*time.Second), until)
	clk.Step(10 * time.Second)
	wait, _ = b.inBackoff("k", exit)
	assert.False(t, wait)
	b.next("k", exit)

	// Doubling up to the 5m cap, always counted from the exit.
	for range 10 {
		clk.Step(5 * time.Second)
		exit = clk.Now()
		_, until = b.inBackoff("k", exit)
		clk.Step(until.Sub(clk.Now()))
		b.next("k", exit)
	}
	clk.Step(5 * time.Second)
	exit = clk.Now()
	_, until = b.inBackoff("k", exit)
	assert.Equal(t, 5*time.Minute, until.Sub(exit), "capped at the maximum, from the exit")

	// An exit long after the last counted one starts over.
	clk.Step(11 * time.Minute)
	wait, _ = b.inBackoff("k", clk.Now())
	assert.False(t, wait)
	b.next("k", clk.Now())
	clk.Step(time.Second)
	_, until = b.inBackoff("k", clk.Now())
	assert.Equal(t, 10*time.Second, until.Sub(clk.Now()))
}
