package volumes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// claimPlugin is a host's own volume type: persistentVolumeClaims served
// from a directory of the node per claim, the way a local-path provider
// lays them out; it mounts a tmpfs for claims named "scratch-*".
type claimPlugin struct {
	m     *Manager // to mount, as a host plugin would through its own mounter
	base  string
	fail  error
	calls int
}

func (*claimPlugin) Name() string                 { return "example.com~claims" }
func (*claimPlugin) CanSupport(v *v1.Volume) bool { return v.PersistentVolumeClaim != nil }
func (*claimPlugin) OwnsMounts() bool             { return true }

func (p *claimPlugin) SetUp(_ context.Context, v Volume) (Mount, error) {
	p.calls++
	if p.fail != nil {
		return Mount{}, p.fail
	}
	name := v.Spec.PersistentVolumeClaim.ClaimName
	if filepath.Base(name) != name {
		return Mount{}, errors.New("bad claim name")
	}
	if name == "scratch" {
		if err := os.MkdirAll(v.Dir, 0o750); err != nil {
			return Mount{}, err
		}
		if err := p.m.cfg.Mounter.MountTmpfs(v.Dir, 1<<20); err != nil {
			return Mount{}, err
		}
		return Mount{HostPath: v.Dir}, nil
	}
	dir := filepath.Join(p.base, name)
	return Mount{HostPath: dir, ReadOnly: v.Spec.PersistentVolumeClaim.ReadOnly}, os.MkdirAll(dir, 0o750)
}

func claimVolume(name, claim string, ro bool) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: ro}}}
}

func TestHostPluginServesItsVolumeType(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	p := &claimPlugin{base: t.TempDir()}
	m, err := New(Config{RootDir: t.TempDir(), Mounter: e.mounter, Recorder: e.recorder, Clock: e.clock, Plugins: []Plugin{p}})
	require.NoError(t, err)
	p.m = m
	pod := testPod(claimVolume("data", "db", true), claimVolume("tmp", "scratch", false),
		v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "tmp", MountPath: "/tmp"},
		{Name: "cache", MountPath: "/cache"}}
	require.NoError(t, m.SetUpPod(ctx, pod))
	mounts, err := m.ContainerMounts(ctx, pod, &pod.Spec.Containers[0], nil)
	require.NoError(t, err)
	require.Len(t, mounts, 3)
	assert.Equal(t, filepath.Join(p.base, "db"), mounts[0].HostPath)
	assert.True(t, mounts[0].Readonly, "the plugin's read-only claim")
	assert.Equal(t, filepath.Join(m.PodDir(pod.UID), "volumes", "example.com~claims", "tmp"), mounts[1].HostPath)
	assert.False(t, mounts[1].Readonly)
	assert.Equal(t, filepath.Join(m.PodDir(pod.UID), "volumes", "kubernetes.io~empty-dir", "cache"), mounts[2].HostPath,
		"built-in types still served")

	// Every sync sets it up again (contents follow their sources).
	require.NoError(t, m.SetUpPod(ctx, pod))
	assert.Equal(t, 4, p.calls)

	// Its tmpfs is the plugin's own: torn down with the pod.
	require.NoError(t, m.TearDownPod(ctx, pod.UID))
	_, err = os.Stat(m.PodDir(pod.UID))
	assert.True(t, os.IsNotExist(err))
	assert.DirExists(t, filepath.Join(p.base, "db"), "what the plugin keeps outside the pod directory is its own")
}

func TestHostPluginFailureIsAFailedMount(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	p := &claimPlugin{base: t.TempDir(), fail: errors.New("claim db is not bound")}
	m, err := New(Config{RootDir: t.TempDir(), Mounter: e.mounter, Recorder: e.recorder, Clock: e.clock, Plugins: []Plugin{p}})
	require.NoError(t, err)
	pod := testPod(claimVolume("data", "db", false))
	err = m.SetUpPod(ctx, pod)
	var me *MountError
	require.ErrorAs(t, err, &me)
	assert.Contains(t, <-e.recorder.Events, `FailedMount MountVolume.SetUp failed for volume "data" : claim db is not bound`)
	_, err = m.ContainerMounts(ctx, pod, &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/d"}}}, nil)
	require.ErrorContains(t, err, "not set up")
}

func TestWithoutAPluginAVolumeTypeIsRefused(t *testing.T) {
	e := newEnv(t)
	err := e.m.SetUpPod(context.Background(), testPod(v1.Volume{Name: "nfs", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}}}))
	require.ErrorContains(t, err, "volume type nfs is not supported by this node agent")
}

func TestNewRefusesBadPlugins(t *testing.T) {
	_, err := New(Config{RootDir: t.TempDir(), Plugins: []Plugin{nil}})
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = New(Config{RootDir: t.TempDir(), Plugins: []Plugin{badName{}}})
	require.ErrorIs(t, err, ErrInvalidConfig)
}

type badName struct{}

func (badName) Name() string               { return "../escape" }
func (badName) CanSupport(*v1.Volume) bool { return false }
func (badName) SetUp(context.Context, Volume) (Mount, error) {
	return Mount{}, nil
}
