package volumes

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/internal/diskusage"
)

func TestUsage(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"k": "v"}})
	pod := testPod(v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}},
		v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: t.TempDir()}}})
	assert.Nil(t, e.m.Usage(pod.UID), "not set up")
	require.NoError(t, e.setUp(ctx, pod))
	dir := filepath.Join(e.m.PodDir(pod.UID), "volumes", "kubernetes.io~empty-dir", "scratch")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data"), make([]byte, 1<<20), 0o644))

	byName := func() map[string]VolumeUsage {
		out := map[string]VolumeUsage{}
		for _, u := range e.m.Usage(pod.UID) {
			out[u.Name] = u
		}
		return out
	}
	u := byName()
	require.Len(t, u, 2, "hostPath is the node's, not the pod's")
	assert.GreaterOrEqual(t, u["scratch"].UsedBytes, uint64(1<<20))
	assert.Equal(t, uint64(2), u["scratch"].InodesUsed, "the directory and its file")
	assert.True(t, u["scratch"].LocalEphemeral)
	assert.True(t, u["cfg"].LocalEphemeral)
	assert.NotZero(t, u["cfg"].InodesUsed)

	// Served from the last walk for a period.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "more"), make([]byte, 1<<20), 0o644))
	assert.Equal(t, u["scratch"].UsedBytes, byName()["scratch"].UsedBytes)
	e.clock.Step(DefaultUsagePeriod)
	assert.GreaterOrEqual(t, byName()["scratch"].UsedBytes, uint64(2<<20))

	require.NoError(t, e.m.TearDownPod(ctx, pod.UID))
	assert.Nil(t, e.m.Usage(pod.UID))
	_, err := New(Config{RootDir: t.TempDir(), UsagePeriod: -time.Second})
	assert.ErrorIs(t, err, ErrInvalidConfig)
}

// publishingPlugin mounts PersistentVolumes with a csi source at a
// directory of its own, as volumes/csi publishes one at <dir>/mount.
type publishingPlugin struct{ at string }

func (*publishingPlugin) Name() string                 { return "kubernetes.io~csi" }
func (*publishingPlugin) CanSupport(v *v1.Volume) bool { return v.CSI != nil }
func (*publishingPlugin) CanSupportPersistent(pv *v1.PersistentVolume) bool {
	return pv.Spec.CSI != nil
}
func (p *publishingPlugin) SetUp(context.Context, Volume) (Mount, error) {
	return Mount{HostPath: p.at}, nil
}

// A pod's persistent volumes report their claim and the statfs figures of
// the filesystem at their mount (a tmp dir stands for each), as the
// kubelet's MetricsStatFS; a hostPath PersistentVolume has none, as the
// kubelet's hostPath plugin; a claim is not local ephemeral storage.
func TestUsagePersistentVolumes(t *testing.T) {
	ctx := context.Background()
	local, eph, published, host := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	localClaim, csiClaim, hostClaim := boundClaim("data", "pv-local"), boundClaim("db", "pv-csi"), boundClaim("host", "pv-host")
	pod := testPod(claimVolume("data", "data", false), claimVolume("db", "db", true), claimVolume("host", "host", false),
		v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}},
		v1.Volume{Name: "tmp", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	ephClaim := boundClaim("p-scratch", "pv-eph") // <pod>-<volume>
	ephClaim.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}}
	e := newEnv(t, localClaim, pvFor("pv-local", localClaim, v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: local}}),
		csiClaim, pvFor("pv-csi", csiClaim, v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "h"}}),
		hostClaim, pvFor("pv-host", hostClaim, v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host}}),
		ephClaim, pvFor("pv-eph", ephClaim, v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: eph}}))
	m, err := New(Config{RootDir: t.TempDir(), Client: e.client, Mounter: e.mounter, Recorder: e.recorder, Clock: e.clock,
		Plugins: []Plugin{&publishingPlugin{at: published}}})
	require.NoError(t, err)
	var statted []string
	m.statfs = func(path string) (diskusage.Fs, error) {
		statted = append(statted, path)
		return diskusage.Statfs(path)
	}
	require.NoError(t, m.SetUpPod(ctx, pod))

	u := m.Usage(pod.UID)
	names := []string{}
	for _, v := range u {
		names = append(names, v.Name)
	}
	require.Equal(t, []string{"data", "db", "scratch", "tmp"}, names, "in the pod's order; the hostPath PV has no statistics")
	assert.Equal(t, []string{local, published, eph, filepath.Join(m.PodDir(pod.UID), "volumes", "kubernetes.io~empty-dir", "tmp")}, statted,
		"each persistent volume at its mount, the emptyDir in the pod's directory")
	for i, want := range []struct {
		path  string
		claim string
	}{{local, "data"}, {published, "db"}, {eph, "p-scratch"}} {
		v := u[i]
		require.NotNil(t, v.PVC, v.Name)
		assert.Equal(t, types.NamespacedName{Namespace: "ns", Name: want.claim}, *v.PVC, v.Name)
		var st unix.Statfs_t
		require.NoError(t, unix.Statfs(want.path, &st))
		assert.Equal(t, st.Blocks*uint64(st.Bsize), v.CapacityBytes, v.Name)
		assert.Equal(t, st.Files, v.Inodes, v.Name)
		assert.NotZero(t, v.UsedBytes, v.Name)
		assert.LessOrEqual(t, v.UsedBytes+v.AvailableBytes, v.CapacityBytes, v.Name)
		assert.Equal(t, v.Inodes-v.InodesFree, v.InodesUsed, v.Name)
		assert.False(t, v.LocalEphemeral, v.Name)
		assert.Equal(t, e.clock.Now(), v.Time, v.Name)
	}
	tmp := u[3]
	assert.Nil(t, tmp.PVC)
	assert.True(t, tmp.LocalEphemeral)
	assert.Equal(t, uint64(1), tmp.InodesUsed, "the du walk's: the empty directory")
	assert.NotZero(t, tmp.CapacityBytes, "with its filesystem's figures, as the kubelet's MetricsDu")

	// Served from the last measurement for a period; gone with the pod.
	statted = nil
	m.Usage(pod.UID)
	assert.Empty(t, statted)
	require.NoError(t, m.TearDownPod(ctx, pod.UID))
	assert.Nil(t, m.Usage(pod.UID))
}

// A persistent volume whose filesystem does not answer statfs (a hung
// network mount) is left out after UsageTimeout on the Manager's clock,
// and not asked again until the pending call returns.
func TestUsageStatfsTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := context.Background()
	path := t.TempDir()
	claim := boundClaim("data", "pv")
	client := fake.NewClientset(claim, pvFor("pv", claim, v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: path}}))
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	m, err := New(Config{RootDir: t.TempDir(), Client: client, Mounter: &fakeMounter{}, Clock: clk, UsageTimeout: 3 * time.Second})
	require.NoError(t, err)
	release := make(chan struct{})
	var calls atomic.Int32
	m.statfs = func(string) (diskusage.Fs, error) {
		calls.Add(1)
		<-release
		return diskusage.Fs{Capacity: 100, Available: 60, Used: 40, Inodes: 10, InodesFree: 7, InodesUsed: 3}, nil
	}
	pod := testPod(claimVolume("data", "data", false))
	require.NoError(t, m.SetUpPod(ctx, pod))
	require.False(t, clk.HasWaiters())

	got := make(chan []VolumeUsage)
	go func() { got <- m.Usage(pod.UID) }()
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond)
	clk.Step(3*time.Second - time.Nanosecond)
	require.True(t, clk.HasWaiters(), "still waiting: Usage stops its timer when it returns")
	clk.Step(time.Nanosecond)
	require.Empty(t, <-got, "the hung volume is left out")

	clk.Step(DefaultUsagePeriod)
	require.Empty(t, m.Usage(pod.UID), "still pending: not asked again, no wait")
	require.Equal(t, int32(1), calls.Load())
	require.False(t, clk.HasWaiters())

	close(release)
	require.Eventually(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.statfsPending) == 0
	}, 10*time.Second, time.Millisecond)
	clk.Step(DefaultUsagePeriod)
	u := m.Usage(pod.UID)
	require.Len(t, u, 1)
	assert.Equal(t, VolumeUsage{Name: "data", UsedBytes: 40, InodesUsed: 3, CapacityBytes: 100, AvailableBytes: 60, Inodes: 10, InodesFree: 7,
		PVC: &types.NamespacedName{Namespace: "ns", Name: "data"}, Time: clk.Now()}, u[0])
	assert.Equal(t, int32(2), calls.Load())
	require.False(t, clk.HasWaiters(), "the timer is stopped")

	_, err = New(Config{RootDir: t.TempDir(), UsageTimeout: -time.Second})
	assert.ErrorIs(t, err, ErrInvalidConfig)
}
