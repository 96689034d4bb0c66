package cgroups

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func rl(pairs ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[v1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func ctr(name string, req, lim v1.ResourceList) v1.Container {
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
}

// guar is a container whose requests equal its limits, as the API server
// defaults limits-only containers.
func guar(name, cpu, mem string) v1.Container {
	return ctr(name, rl("cpu", cpu, "memory", mem), rl("cpu", cpu, "memory", mem))
}

func podWith(uid string, cs ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid)}, Spec: v1.PodSpec{Containers: cs}}
}

func TestPodResources(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	guaranteed := podWith("g", guar("a", "500m", "128Mi"), guar("b", "250m", "64Mi"))
	withInit := podWith("i", ctr("a", rl("cpu", "100m"), rl("cpu", "200m", "memory", "100Mi")))
	withInit.Spec.InitContainers = []v1.Container{ctr("init", rl("cpu", "1"), rl("cpu", "1", "memory", "10Mi"))}
	sidecar := podWith("s", ctr("a", rl("cpu", "100m"), nil))
	sidecar.Spec.InitContainers = []v1.Container{ctr("proxy", rl("cpu", "200m"), nil)}
	sidecar.Spec.InitContainers[0].RestartPolicy = &always
	overhead := podWith("o", ctr("a", rl("cpu", "100m", "memory", "10Mi"), rl("cpu", "100m", "memory", "10Mi")))
	overhead.Spec.Overhead = rl("cpu", "250m", "memory", "120Mi")
	huge := podWith("h", ctr("a", rl("cpu", "1", "memory", "1Gi", "hugepages-2Mi", "4Mi"), rl("cpu", "1", "memory", "1Gi", "hugepages-2Mi", "4Mi")))
	podLevel := podWith("p", ctr("a", rl("cpu", "100m"), nil), ctr("b", nil, nil))
	podLevel.Spec.Resources = &v1.ResourceRequirements{Requests: rl("cpu", "1"), Limits: rl("cpu", "2", "memory", "1Gi")}

	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want Resources
	}{
		{"guaranteed", guaranteed, Resources{CPUShares: 768, CPUQuota: 75000, CPUPeriod: QuotaPeriod, Memory: 192 << 20}},
		{"burstable without all limits", podWith("b", ctr("a", rl("cpu", "100m"), rl("cpu", "200m")), ctr("b", rl("memory", "1Gi"), nil)),
			Resources{CPUShares: 102, CPUQuota: -1, CPUPeriod: QuotaPeriod, Memory: -1}},
		{"burstable with all limits", withInit,
			// init 1 CPU dominates the 100m app request; limits max(1, 200m) = 1 CPU
			Resources{CPUShares: 1024, CPUQuota: 100000, CPUPeriod: QuotaPeriod, Memory: 100 << 20}},
		{"sidecar requests add up", sidecar, Resources{CPUShares: 307, CPUQuota: -1, CPUPeriod: QuotaPeriod, Memory: -1}},
		{"besteffort", podWith("e", ctr("a", nil, nil)), Resources{CPUShares: MinShares, CPUQuota: -1, CPUPeriod: QuotaPeriod, Memory: -1}},
		{"overhead", overhead, Resources{CPUShares: 358, CPUQuota: 35000, CPUPeriod: QuotaPeriod, Memory: 130 << 20}},
		{"hugepages", huge, Resources{CPUShares: 1024, CPUQuota: 100000, CPUPeriod: QuotaPeriod, Memory: 1 << 30, HugePages: map[int64]int64{2 << 20: 4 << 20}}},
		{"pod-level resources", podLevel, Resources{CPUShares: 1024, CPUQuota: 200000, CPUPeriod: QuotaPeriod, Memory: 1 << 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PodResources(tc.pod)
			if len(got.HugePages) == 0 {
				got.HugePages = nil
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestComputeQOSClass(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want v1.PodQOSClass
	}{
		{"nothing", podWith("a", ctr("a", nil, nil)), v1.PodQOSBestEffort},
		{"ephemeral storage only", podWith("a", ctr("a", rl("ephemeral-storage", "1Gi"), nil)), v1.PodQOSBestEffort},
		{"limits only, not defaulted", podWith("a", ctr("a", nil, rl("cpu", "1", "memory", "1Gi"))), v1.PodQOSBurstable},
		{"equal", podWith("a", ctr("a", rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))), v1.PodQOSGuaranteed},
		{"request below limit", podWith("a", ctr("a", rl("cpu", "500m", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))), v1.PodQOSBurstable},
		{"one container without limits", podWith("a", guar("a", "1", "1Gi"), ctr("b", nil, nil)), v1.PodQOSBurstable},
		{"cpu limit only", podWith("a", ctr("a", nil, rl("cpu", "1"))), v1.PodQOSBurstable},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, ComputeQOSClass(tc.pod)) })
	}
	p := podWith("a", ctr("a", nil, nil))
	p.Status.QOSClass = v1.PodQOSBurstable
	assert.Equal(t, v1.PodQOSBurstable, QOSClass(p), "the API server's class wins")
}

// v1Tree lays out a cgroup v1 mount as plain directories.
func v1Tree(t *testing.T) string {
	t.Helper()
	mnt := t.TempDir()
	for _, h := range []string{"cpu,cpuacct", "memory", "cpuset", "pids", "hugetlb"} {
		require.NoError(t, os.Mkdir(filepath.Join(mnt, h), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(mnt, h, "cgroup.procs"), nil, 0o644))
	}
	require.NoError(t, os.Symlink("cpu,cpuacct", filepath.Join(mnt, "cpu")))
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "cpuset", "cpuset.cpus"), []byte("0-1\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "cpuset", "cpuset.mems"), []byte("0\n"), 0o644))
	return mnt
}

func read(t *testing.T, parts ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(parts...))
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

func TestManagerV1(t *testing.T) {
	ctx := context.Background()
	mnt := v1Tree(t)
	m, err := New(Config{Mount: mnt, Allocatable: rl("cpu", "2", "memory", "4Gi", "pods", "110")})
	require.NoError(t, err)
	assert.False(t, m.V2())
	require.NoError(t, m.Setup(ctx))
	cpu := filepath.Join(mnt, "cpu,cpuacct")
	assert.Equal(t, "2048", read(t, cpu, "kubepods", "cpu.shares"), "allocatable CPU")
	assert.Equal(t, "4294967296", read(t, mnt, "memory", "kubepods", "memory.limit_in_bytes"))
	assert.Equal(t, "2", read(t, cpu, "kubepods", "besteffort", "cpu.shares"))
	assert.Equal(t, "0-1", read(t, mnt, "cpuset", "kubepods", "burstable", "cpuset.cpus"), "cpusets inherit")

	g := podWith("g1", guar("a", "500m", "128Mi"))
	b := podWith("b1", ctr("a", rl("cpu", "250m"), rl("memory", "64Mi")))
	e := podWith("e1", ctr("a", nil, nil))
	assert.Equal(t, "/kubepods/podg1", m.PodCgroup(g))
	assert.Equal(t, "/kubepods/burstable/podb1", m.PodCgroup(b))
	assert.Equal(t, "/kubepods/besteffort/pode1", m.PodCgroup(e))
	for _, p := range []*v1.Pod{g, b, e} {
		assert.False(t, m.PodExists(p))
		require.NoError(t, m.EnsurePod(ctx, p))
		assert.True(t, m.PodExists(p))
	}
	assert.Equal(t, "512", read(t, cpu, "kubepods", "podg1", "cpu.shares"))
	assert.Equal(t, "50000", read(t, cpu, "kubepods", "podg1", "cpu.cfs_quota_us"))
	assert.Equal(t, "100000", read(t, cpu, "kubepods", "podg1", "cpu.cfs_period_us"))
	assert.Equal(t, "134217728", read(t, mnt, "memory", "kubepods", "podg1", "memory.limit_in_bytes"))
	assert.Equal(t, "256", read(t, cpu, "kubepods", "burstable", "podb1", "cpu.shares"))
	assert.Equal(t, "-1", read(t, cpu, "kubepods", "burstable", "podb1", "cpu.cfs_quota_us"), "not every container has a CPU limit")
	assert.Equal(t, "67108864", read(t, mnt, "memory", "kubepods", "burstable", "podb1", "memory.limit_in_bytes"))

	got, err := m.PodConfig(g)
	require.NoError(t, err)
	assert.Equal(t, Resources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: QuotaPeriod, Memory: 128 << 20}, got)

	// A resize: more CPU, less memory.
	require.NoError(t, m.UpdatePod(ctx, g, Resources{CPUShares: 1024, CPUQuota: 100000, CPUPeriod: QuotaPeriod, Memory: 100 << 20}))
	got, err = m.PodConfig(g)
	require.NoError(t, err)
	assert.Equal(t, Resources{CPUShares: 1024, CPUQuota: 100000, CPUPeriod: QuotaPeriod, Memory: 100 << 20}, got)

	require.NoError(t, m.UpdateQoS(ctx, []*v1.Pod{g, b, e, podWith("b2", ctr("a", rl("cpu", "750m"), nil))}))
	assert.Equal(t, "1024", read(t, cpu, "kubepods", "burstable", "cpu.shares"), "burstable pods' requests")

	pods, err := m.Pods()
	require.NoError(t, err)
	assert.Equal(t, map[types.UID]string{"g1": "/kubepods/podg1", "b1": "/kubepods/burstable/podb1", "e1": "/kubepods/besteffort/pode1"}, pods)
	require.NoError(t, os.Mkdir(filepath.Join(cpu, "kubepods", "burstable", "podb1", "sandbox"), 0o755)) // the runtime's
	require.NoError(t, m.Destroy(ctx, pods["b1"]))
	assert.False(t, m.PodExists(b))
	_, err = os.Stat(filepath.Join(mnt, "memory", "kubepods", "burstable", "podb1"))
	assert.True(t, os.IsNotExist(err), "gone from every hierarchy")
	require.NoError(t, m.Destroy(ctx, pods["b1"]), "destroying twice is fine")
}

func TestManagerV1HugePages(t *testing.T) {
	ctx := context.Background()
	mnt := v1Tree(t)
	m, err := New(Config{Mount: mnt})
	require.NoError(t, err)
	require.NoError(t, m.Setup(ctx))
	p := podWith("h", ctr("a", rl("cpu", "1", "memory", "1Gi", "hugepages-2Mi", "4Mi"), rl("cpu", "1", "memory", "1Gi", "hugepages-2Mi", "4Mi")))
	// The kernel offers the size files in every new cgroup; stand in for it.
	dir := filepath.Join(mnt, "hugetlb", "kubepods", "podh")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, f := range []string{"hugetlb.2MB.limit_in_bytes", "hugetlb.1GB.limit_in_bytes"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("9223372036854771712"), 0o644))
	}
	require.NoError(t, m.create(context.Background(), m.podElems(p), PodResources(p), true))
	assert.Equal(t, "4194304", read(t, dir, "hugetlb.2MB.limit_in_bytes"))
	assert.Equal(t, "0", read(t, dir, "hugetlb.1GB.limit_in_bytes"), "sizes a pod did not request are closed")
}

func TestManagerV2(t *testing.T) {
	ctx := context.Background()
	mnt := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "cgroup.controllers"), []byte("cpuset cpu io memory hugetlb pids rdma\n"), 0o644))
	m, err := New(Config{Mount: mnt, Root: "/nodekit", PodPIDsLimit: 1024})
	require.NoError(t, err)
	assert.True(t, m.V2())
	require.NoError(t, m.Setup(ctx))
	assert.Equal(t, "+cpuset +cpu +io +memory +hugetlb +pids", read(t, mnt, "cgroup.subtree_control"))
	p := podWith("g", guar("a", "1500m", "1Gi"))
	assert.Equal(t, "/nodekit/kubepods/podg", m.PodCgroup(p))
	assert.Equal(t, "/nodekit/kubepods", m.PodsCgroup())
	require.NoError(t, m.EnsurePod(ctx, p))
	dir := filepath.Join(mnt, "nodekit", "kubepods", "podg")
	assert.Equal(t, "59", read(t, dir, "cpu.weight"))
	assert.Equal(t, "150000 100000", read(t, dir, "cpu.max"))
	assert.Equal(t, "1073741824", read(t, dir, "memory.max"))
	assert.Equal(t, "1024", read(t, dir, "pids.max"))
	got, err := m.PodConfig(p)
	require.NoError(t, err)
	assert.Equal(t, uint64(59), weightFromShares(got.CPUShares), "shares read back through the weight (lossy)")
	got.CPUShares = 0
	assert.Equal(t, Resources{CPUQuota: 150000, CPUPeriod: QuotaPeriod, Memory: 1 << 30}, got)

	b := podWith("b", ctr("a", rl("cpu", "100m"), nil))
	require.NoError(t, m.EnsurePod(ctx, b))
	dir = filepath.Join(mnt, "nodekit", "kubepods", "burstable", "podb")
	assert.Equal(t, "max 100000", read(t, dir, "cpu.max"))
	assert.Equal(t, "max", read(t, dir, "memory.max"))
}

func TestNewRefuses(t *testing.T) {
	mnt := v1Tree(t)
	for _, cfg := range []Config{
		{Mount: mnt, Driver: DriverSystemd, Systemd: &fakeSystemd{}, Root: "/custom"},
		{Mount: mnt, Driver: "nope"},
		{Mount: mnt, Root: "relative"},
		{Mount: mnt, Root: "/a/../b"},
		{Mount: t.TempDir()}, // no hierarchy
	} {
		_, err := New(cfg)
		assert.Error(t, err, "%+v", cfg)
	}
}

func TestWeightRoundTrip(t *testing.T) {
	for _, s := range []uint64{2, 102, 256, 1024, 1536, 2048, 262144} {
		w := weightFromShares(s)
		assert.Equal(t, w, weightFromShares(sharesFromWeight(w)), "shares %d", s)
	}
}

// Shares compare exactly on cgroup v1 and as weights on v2, where shares
// read back from a weight round (81 and 87 shares are both weight 4).
func TestSameShares(t *testing.T) {
	v1mnt := t.TempDir()
	for _, h := range []string{"cpu", "memory"} {
		require.NoError(t, os.MkdirAll(filepath.Join(v1mnt, h), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(v1mnt, h, "cgroup.procs"), nil, 0o644))
	}
	m1, err := New(Config{Mount: v1mnt})
	require.NoError(t, err)
	require.False(t, m1.V2())
	assert.True(t, m1.SameShares(87, 87))
	assert.False(t, m1.SameShares(81, 87))

	v2mnt := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(v2mnt, "cgroup.controllers"), []byte("cpu memory\n"), 0o644))
	m2, err := New(Config{Mount: v2mnt})
	require.NoError(t, err)
	require.True(t, m2.V2())
	assert.True(t, m2.SameShares(81, 87))
	assert.False(t, m2.SameShares(81, 1024))
}
