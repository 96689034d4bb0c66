package volumes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/objects"
)

// fakeMounter records mounts in memory.
type fakeMounter struct {
	mu     sync.Mutex
	points map[string]string // target → what
}

func (f *fakeMounter) add(target, what string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.points == nil {
		f.points = map[string]string{}
	}
	f.points[target] = what
	return nil
}
func (f *fakeMounter) MountTmpfs(target string, size int64) error {
	return f.add(target, "tmpfs size="+resource.NewQuantity(size, resource.BinarySI).String())
}
func (f *fakeMounter) BindMount(source, target string) error { return f.add(target, "bind") }
func (f *fakeMounter) Unmount(target string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.points, target)
	return nil
}
func (f *fakeMounter) MountPoints() ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for p := range f.points {
		out = append(out, p)
	}
	return out, nil
}

// testPod is a pod whose container mounts each of its volumes (a volume
// no container mounts is not set up).
func testPod(vols ...v1.Volume) *v1.Pod {
	c := v1.Container{Name: "c"}
	for _, v := range vols {
		c.VolumeMounts = append(c.VolumeMounts, v1.VolumeMount{Name: v.Name, MountPath: "/v/" + v.Name})
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1", Labels: map[string]string{"app": "a"}},
		Spec:       v1.PodSpec{Volumes: vols, Containers: []v1.Container{c}},
	}
}

type testEnv struct {
	m        *Manager
	client   *fake.Clientset
	mounter  *fakeMounter
	recorder *record.FakeRecorder
	clock    *clocktesting.FakeClock
	objects  *objects.Cache
	watches  atomic.Int32
}

func newEnv(t *testing.T, objs ...runtime.Object) *testEnv {
	t.Helper()
	e := &testEnv{client: fake.NewClientset(objs...), mounter: &fakeMounter{}, recorder: record.NewFakeRecorder(100),
		clock: clocktesting.NewFakeClock(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))}
	tokens := 0
	e.client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		tokens++
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		tr.Status.Token = "token-" + string(rune('0'+tokens))
		tr.Status.ExpirationTimestamp = metav1.NewTime(e.clock.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))
		return true, tr, nil
	})
	// The fake's own watch, counted once it is open: an object deleted
	// between a cache's list and its watch would never reach the cache.
	e.client.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := e.client.Tracker().Watch(a.GetResource(), a.GetNamespace(), a.(k8stesting.WatchActionImpl).ListOptions)
		if err == nil {
			e.watches.Add(1)
		}
		return true, w, err
	})
	oc, err := objects.New(objects.Config{Client: e.client})
	require.NoError(t, err)
	t.Cleanup(oc.Stop)
	e.objects = oc
	m, err := New(Config{RootDir: t.TempDir(), Objects: oc, Client: e.client, Mounter: e.mounter, Recorder: e.recorder, Clock: e.clock,
		Allocatable: func() v1.ResourceList {
			return v1.ResourceList{v1.ResourceMemory: resource.MustParse("2Gi"), v1.ResourceCPU: resource.MustParse("2")}
		}})
	require.NoError(t, err)
	e.m = m
	return e
}

// setUp registers the pod's objects, as the agent does on each sync, and
// sets up its volumes.
func (e *testEnv) setUp(ctx context.Context, pod *v1.Pod) error {
	e.objects.Register(ctx, pod)
	return e.m.SetUpPod(ctx, pod)
}

func (e *testEnv) path(pod *v1.Pod, vol string) string {
	return e.m.volumePath(pod, &pod.Spec.Volumes[0])
}

func TestNewValidates(t *testing.T) {
	_, err := New(Config{})
	assert.ErrorIs(t, err, ErrInvalidConfig)
	_, err = New(Config{RootDir: "relative"})
	assert.ErrorIs(t, err, ErrInvalidConfig)
}

func TestConfigMapVolumeFollowsUpdates(t *testing.T) {
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}, Data: map[string]string{"k": "v1", "other": "o"},
		BinaryData: map[string][]byte{"bin": {0, 1}}}
	e := newEnv(t, cm)
	mode := int32(0o400)
	pod := testPod(v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, DefaultMode: &mode}}})
	ctx := context.Background()
	require.NoError(t, e.setUp(ctx, pod))
	dir := e.path(pod, "cfg")
	assert.Equal(t, "v1", readLinked(t, dir, "k"))
	assert.Equal(t, "\x00\x01", readLinked(t, dir, "bin"))
	info, err := os.Stat(filepath.Join(dir, "k"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o400), info.Mode().Perm())

	cm.Data["k"] = "v2"
	_, err = e.client.CoreV1().ConfigMaps("ns").Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		require.NoError(t, e.setUp(ctx, pod))
		return readLinked(t, dir, "k") == "v2"
	}, 5*time.Second, 10*time.Millisecond, "the watch brings the update to the next sync")

	mounts, err := e.m.ContainerMounts(context.Background(), pod, &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}}, nil)
	require.NoError(t, err)
	require.Len(t, mounts, 1)
	assert.Equal(t, &runtimeapi.Mount{ContainerPath: "/etc/cfg", HostPath: dir, Readonly: true,
		Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE}, mounts[0], "configMap volumes are read-only")
}

func TestMissingObjectsFailLoudlyUnlessOptional(t *testing.T) {
	e := newEnv(t, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Data: map[string][]byte{"a": []byte("x")}})
	ctx := context.Background()
	pod := testPod(v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "absent"}}}})
	err := e.setUp(ctx, pod)
	assert.EqualError(t, err, `MountVolume.SetUp failed for volume "cfg" : configmap "absent" not found`)
	assert.Equal(t, `Warning FailedMount MountVolume.SetUp failed for volume "cfg" : configmap "absent" not found`, <-e.recorder.Events)

	opt := true
	pod = testPod(v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: &opt}}})
	require.NoError(t, e.setUp(ctx, pod), "an optional missing configMap is an empty volume")

	pod = testPod(v1.Volume{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{
		SecretName: "s", Items: []v1.KeyToPath{{Key: "nope", Path: "p"}}}}})
	assert.EqualError(t, e.setUp(ctx, pod), `MountVolume.SetUp failed for volume "sec" : references non-existent secret key: nope`)

	pod = testPod(v1.Volume{Name: "inline", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "d"}}})
	assert.ErrorContains(t, e.setUp(ctx, pod), "volume type csi is not supported by this node agent")
}

func TestProjectedServiceAccountVolume(t *testing.T) {
	e := newEnv(t, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "ns"}, Data: map[string]string{"ca.crt": "CA"}})
	exp := int64(3600)
	mode := int32(0o644)
	pod := testPod(v1.Volume{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}})
	ctx := context.Background()
	require.NoError(t, e.setUp(ctx, pod))
	dir := e.path(pod, "kube-api-access")
	assert.Equal(t, "token-1", readLinked(t, dir, "token"))
	assert.Equal(t, "CA", readLinked(t, dir, "ca.crt"))
	assert.Equal(t, "ns", readLinked(t, dir, "namespace"))

	var req *authenticationv1.TokenRequest
	for _, a := range e.client.Actions() {
		if a.GetSubresource() == "token" {
			req = a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest)
		}
	}
	require.NotNil(t, req)
	assert.Equal(t, &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "uid-1"}, req.Spec.BoundObjectRef)

	// Reused until 80% of its life, then refreshed.
	e.clock.Step(47 * time.Minute)
	require.NoError(t, e.setUp(ctx, pod))
	assert.Equal(t, "token-1", readLinked(t, dir, "token"))
	e.clock.Step(2 * time.Minute)
	require.NoError(t, e.setUp(ctx, pod))
	assert.Equal(t, "token-2", readLinked(t, dir, "token"))
}

func TestFSGroupOwnershipAndTokenMode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	e := newEnv(t)
	gid, exp := int64(1234), int64(3600)
	pod := testPod(
		v1.Volume{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}}}}}},
		v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	)
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &gid}
	require.NoError(t, e.setUp(context.Background(), pod))
	proj := e.m.volumePath(pod, &pod.Spec.Volumes[0])
	info, err := os.Stat(filepath.Join(proj, "token"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), info.Mode().Perm(), "0600 plus the fsGroup's read bit")
	assert.Equal(t, uint32(gid), statGID(t, info))

	scratch := e.m.volumePath(pod, &pod.Spec.Volumes[1])
	info, err = os.Stat(scratch)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSetgid|0o777, info.Mode()&(os.ModeSetgid|os.ModePerm))
	assert.Equal(t, uint32(gid), statGID(t, info))
}

func TestEmptyDirMemoryAndTeardown(t *testing.T) {
	e := newEnv(t)
	limit := resource.MustParse("64Mi")
	pod := testPod(v1.Volume{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{
		Medium: v1.StorageMediumMemory, SizeLimit: &limit}}})
	ctx := context.Background()
	require.NoError(t, e.setUp(ctx, pod))
	dir := e.path(pod, "mem")
	assert.Equal(t, map[string]string{dir: "tmpfs size=64Mi"}, e.mounter.points)
	require.NoError(t, e.setUp(ctx, pod), "idempotent")
	assert.Len(t, e.mounter.points, 1)
	info, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o777), info.Mode().Perm())

	// A subPath of it is bound under the pod directory.
	c := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "mem", MountPath: "/m", SubPath: "a/b"}}}
	mounts, err := e.m.ContainerMounts(context.Background(), pod, c, nil)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(e.m.PodDir(pod.UID), "volume-subpaths", "mem", "c", "0"), mounts[0].HostPath)
	assert.DirExists(t, filepath.Join(dir, "a", "b"), "a missing subPath is created")

	require.NoError(t, e.m.TearDownPod(ctx, pod.UID))
	assert.Empty(t, e.mounter.points, "tmpfs and subPath binds are unmounted")
	assert.NoDirExists(t, e.m.PodDir(pod.UID))
	require.NoError(t, e.m.TearDownPod(ctx, pod.UID), "again: nothing left to do")
}

func TestEmptyDirMemorySize(t *testing.T) {
	alloc := resource.MustParse("1Gi")
	small, huge := resource.MustParse("10Mi"), resource.MustParse("10Gi")
	pod := testPod()
	assert.Equal(t, alloc.Value(), emptyDirMemorySize(alloc, nil, pod))
	assert.Equal(t, small.Value(), emptyDirMemorySize(alloc, &small, pod))
	assert.Equal(t, alloc.Value(), emptyDirMemorySize(alloc, &huge, pod), "never above allocatable")
	pod.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("100Mi")}
	assert.Equal(t, int64(100<<20), emptyDirMemorySize(alloc, nil, pod), "the pod's memory limit bounds it")
}

func TestSubPathEscapesAreRefused(t *testing.T) {
	e := newEnv(t)
	pod := testPod(v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	ctx := context.Background()
	require.NoError(t, e.setUp(ctx, pod))
	dir := e.path(pod, "scratch")
	outside := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "evil")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "real"), 0o755))
	require.NoError(t, os.Symlink("real", filepath.Join(dir, "alias")))

	mount := func(sub string) (*runtimeapi.Mount, error) {
		ms, err := e.m.ContainerMounts(context.Background(), pod, &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/s", SubPath: sub}}}, nil)
		if err != nil {
			return nil, err
		}
		return ms[0], nil
	}
	_, err := mount("evil")
	assert.EqualError(t, err, `failed to prepare subPath for volumeMount "scratch" of container "c"`)
	assert.NotContains(t, err.Error(), outside, "host paths stay in the agent's log, not in the pod's status")
	_, err = mount("evil/created")
	assert.Error(t, err, "no directory is created through an escaping link")
	assert.NoDirExists(t, filepath.Join(outside, "created"))
	_, err = mount("../x")
	assert.Error(t, err)
	_, err = mount("/etc")
	assert.ErrorContains(t, err, "must not be an absolute path")
	_, err = mount("alias")
	assert.NoError(t, err, "a link that stays inside the volume is fine")
}

func TestHostPathTypes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	typ := func(t v1.HostPathType) *v1.HostPathType { return &t }
	for _, tc := range []struct {
		path string
		typ  *v1.HostPathType
		err  string
	}{
		{dir, nil, ""},
		{dir, typ(v1.HostPathDirectory), ""},
		{file, typ(v1.HostPathDirectory), "is not a directory"},
		{file, typ(v1.HostPathFile), ""},
		{dir, typ(v1.HostPathFile), "is not a file"},
		{dir, typ(v1.HostPathSocket), "is not a socket file"},
		{dir, typ(v1.HostPathBlockDev), "is not a block device"},
		{dir, typ(v1.HostPathCharDev), "is not a character device"},
		{filepath.Join(dir, "new/dir"), typ(v1.HostPathDirectoryOrCreate), ""},
		{filepath.Join(dir, "newfile"), typ(v1.HostPathFileOrCreate), ""},
		{filepath.Join(dir, "absent"), typ(v1.HostPathFile), "is not a file"},
	} {
		err := checkHostPath(&v1.HostPathVolumeSource{Path: tc.path, Type: tc.typ})
		if tc.err == "" {
			assert.NoError(t, err, tc.path)
		} else {
			assert.ErrorContains(t, err, "hostPath type check failed: "+tc.path+" "+tc.err)
		}
	}
	assert.DirExists(t, filepath.Join(dir, "new/dir"))
	assert.FileExists(t, filepath.Join(dir, "newfile"))
}

func TestDownwardAPIVolumeFollowsLabels(t *testing.T) {
	e := newEnv(t)
	pod := testPod(v1.Volume{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
		{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		{Path: "mem", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
	}}}})
	ctx := context.Background()
	require.NoError(t, e.setUp(ctx, pod))
	dir := e.path(pod, "info")
	assert.Equal(t, `app="a"`, readLinked(t, dir, "labels"))
	assert.Equal(t, "2048", readLinked(t, dir, "mem"), "no limit: node allocatable")
	pod.Labels["tier"] = "web"
	require.NoError(t, e.setUp(ctx, pod))
	assert.Equal(t, "app=\"a\"\ntier=\"web\"", readLinked(t, dir, "labels"))
}

func TestCleanupOrphans(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, uid := range []string{"live", "gone"} {
		require.NoError(t, os.MkdirAll(filepath.Join(e.m.PodDir("x"), "..", uid, "volumes"), 0o750))
	}
	require.NoError(t, e.m.CleanupOrphans(ctx, func(uid typesUID) bool { return uid == "live" }))
	assert.DirExists(t, e.m.PodDir("live"))
	assert.NoDirExists(t, e.m.PodDir("gone"))
}

func TestMountPointParsing(t *testing.T) {
	in := "36 35 98:0 /mnt1 /mnt/with\\040space rw - ext3 /dev/root rw\n37 35 0:1 / /var/lib/kubelet/pods/u/volumes/x rw - tmpfs tmpfs rw\n"
	got, err := parseMountInfo(strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, []string{"/mnt/with space", "/var/lib/kubelet/pods/u/volumes/x"}, got)
}

func TestRefreshFailureOfAVolumeSetUpOnceOnlyWarns(t *testing.T) {
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}, Data: map[string]string{"k": "v"}}
	e := newEnv(t, cm)
	ctx := context.Background()
	pod := testPod(v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}})
	require.NoError(t, e.setUp(ctx, pod))
	require.Eventually(t, func() bool { return e.watches.Load() > 0 }, 5*time.Second, time.Millisecond, "the cache watches the config map")
	require.NoError(t, e.client.CoreV1().ConfigMaps("ns").Delete(ctx, "cfg", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		require.NoError(t, e.setUp(ctx, pod), "a running pod is not held back")
		select {
		case ev := <-e.recorder.Events:
			return strings.Contains(ev, `FailedMount MountVolume.SetUp failed for volume "cfg" : configmap "cfg" not found`)
		default:
			return false
		}
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, "v", readLinked(t, e.path(pod, "cfg"), "k"), "the last content stays")

	other := testPod(pod.Spec.Volumes...)
	other.UID = "uid-2"
	assert.Error(t, e.setUp(ctx, other), "a pod that never had the volume waits for it")
}

func TestTearDownLeavesForeignMounts(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pod := testPod(v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	require.NoError(t, e.setUp(ctx, pod))
	foreign := filepath.Join(e.m.PodDir(pod.UID), "volumes", "kubernetes.io~csi", "pvc-1", "mount")
	require.NoError(t, os.MkdirAll(foreign, 0o750))
	require.NoError(t, e.mounter.add(foreign, "csi"))
	err := e.m.TearDownPod(ctx, pod.UID)
	assert.ErrorContains(t, err, "is a mount this agent did not make")
	assert.DirExists(t, foreign, "nothing deleted through it")
	assert.Contains(t, e.mounter.points, foreign, "and not unmounted")
}

func TestSubPathKeepsRootModeBits(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.Chmod(root, os.ModeSticky|os.ModeSetgid|0o777))
	require.NoError(t, makeSubPath(root, "a/b"))
	for _, d := range []string{"a", "a/b"} {
		info, err := os.Stat(filepath.Join(root, d))
		require.NoError(t, err)
		assert.Equal(t, os.ModeSticky|os.ModeSetgid|0o777, info.Mode()&(os.ModeSticky|os.ModeSetgid|os.ModePerm), d)
	}
}

func TestImageVolumes(t *testing.T) {
	pod := testPod(v1.Volume{Name: "img", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "example.com/data:1"}}})
	c := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "img", MountPath: "/data", SubPath: "dir"}}}
	ctx := context.Background()

	m, err := New(Config{RootDir: t.TempDir(), Mounter: &fakeMounter{}})
	require.NoError(t, err)
	assert.ErrorContains(t, m.SetUpPod(ctx, pod), "volume type image is not supported", "no image service: fails loudly")

	var pulled []string
	m, err = New(Config{RootDir: t.TempDir(), Mounter: &fakeMounter{}, Images: func(_ context.Context, _ *v1.Pod, src *v1.ImageVolumeSource) (string, error) {
		pulled = append(pulled, src.Reference)
		return "sha256:abc", nil
	}})
	require.NoError(t, err)
	require.NoError(t, m.SetUpPod(ctx, pod))
	assert.Equal(t, []string{"example.com/data:1"}, pulled)
	ms, err := m.ContainerMounts(ctx, pod, c, nil)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, &runtimeapi.Mount{ContainerPath: "/data", Readonly: true, ImageSubPath: "dir",
		Image: &runtimeapi.ImageSpec{Image: "sha256:abc", UserSpecifiedImage: "example.com/data:1"}}, ms[0])
	require.NoError(t, m.TearDownPod(ctx, pod.UID))
	_, err = m.ContainerMounts(ctx, pod, c, nil)
	assert.Error(t, err, "forgotten with the pod")
}

func TestMountFailureRetriesSoonThenBacksOff(t *testing.T) {
	e := newEnv(t)
	// The API server's node authorizer has not seen the pod's binding yet.
	refusals := 7
	e.client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" || refusals == 0 {
			return false, nil, nil
		}
		refusals--
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "default",
			errors.New("node requested token bound to a pod scheduled on a different node"))
	})
	exp := int64(3600)
	pod := testPod(v1.Volume{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}}}}}})
	ctx := context.Background()
	var delays []time.Duration
	for range 7 {
		err := e.setUp(ctx, pod)
		ra, ok := errors.AsType[*MountError](err)
		require.True(t, ok, "%v", err)
		assert.ErrorContains(t, err, `MountVolume.SetUp failed for volume "token"`)
		delays = append(delays, ra.RetryAfter())
	}
	assert.Equal(t, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		10 * time.Second, 10 * time.Second}, delays, "doubling, capped at the pod workers' back-off")

	require.NoError(t, e.setUp(ctx, pod))
	assert.Zero(t, e.m.retry.Get(string(pod.UID)), "a success starts the delays over")
}

// A volume no container mounts is not set up, as on the kubelet: its
// missing source does not hold the pod back.
func TestUnusedVolumeIsNotSetUp(t *testing.T) {
	e := newEnv(t)
	pod := testPod(v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "missing"}}}})
	pod.Spec.Containers[0].VolumeMounts = nil
	require.NoError(t, e.m.SetUpPod(context.Background(), pod))
	require.NoDirExists(t, filepath.Join(e.m.PodDir(pod.UID), "volumes", "kubernetes.io~configmap", "cfg"))
}
