package csi_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/volumes"
	"github.com/nodekit/nodekit/volumes/csi"
	"github.com/nodekit/nodekit/volumes/csi/csitest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	nodeName = "node-a"
	drvName  = "csi.example.com"
)

// env is a node with a registered fake driver.
type env struct {
	root    string
	driver  *csitest.Driver
	socket  string
	client  *fake.Clientset
	drivers *csi.Drivers
	plugin  *csi.Plugin
}

func newEnv(t *testing.T, drv *csitest.Driver, objs ...any) *env {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "csi")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
	e := &env{root: t.TempDir(), driver: drv, socket: filepath.Join(sockDir, "csi.sock")}
	if drv.Name == "" {
		drv.Name = drvName
	}
	if drv.NodeID == "" {
		drv.NodeID = "id-" + nodeName
	}
	require.NoError(t, drv.Serve(e.socket))
	t.Cleanup(drv.Stop)
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "node-uid"}}
	e.client = fake.NewClientset(node)
	for _, o := range objs {
		switch o := o.(type) {
		case *storagev1.CSIDriver:
			_, err = e.client.StorageV1().CSIDrivers().Create(context.Background(), o, metav1.CreateOptions{})
		case *v1.Secret:
			_, err = e.client.CoreV1().Secrets(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
		}
		require.NoError(t, err)
	}
	e.restart(t)
	return e
}

// restart builds a new registry and plugin (an agent restart), with the
// driver registered again.
func (e *env) restart(t *testing.T) {
	t.Helper()
	var err error
	e.drivers, err = csi.NewDrivers(csi.DriversConfig{Client: e.client, NodeName: nodeName})
	require.NoError(t, err)
	t.Cleanup(e.drivers.Close)
	require.NoError(t, e.drivers.RegisterPlugin(context.Background(), e.driver.Name, e.socket, []string{"1.0.0"}))
	e.plugin, err = csi.New(csi.Config{RootDir: e.root, NodeName: nodeName, Drivers: e.drivers, Client: e.client, Mounter: volumes.DirOnly()})
	require.NoError(t, err)
}

func (e *env) dir(pod *v1.Pod, vol string) string {
	return filepath.Join(e.root, "pods", string(pod.UID), "volumes", csi.PluginName, vol)
}

func pod(uid string, vols ...v1.Volume) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "ns", UID: types.UID(uid)},
		Spec: v1.PodSpec{ServiceAccountName: "sa", Volumes: vols}}
}

func inline(name string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: drvName,
		VolumeAttributes: map[string]string{"size": "1Gi"}}}}
}

func ephemeralDriver() *storagev1.CSIDriver {
	return &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: drvName}, Spec: storagev1.CSIDriverSpec{
		AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true),
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral, storagev1.VolumeLifecyclePersistent}}}
}

func TestRegistrationPublishesNodeInfo(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, &csitest.Driver{MaxVolumes: 16, Topology: map[string]string{"topology.example.com/rack": "r1"}})
	cn, err := e.client.StorageV1().CSINodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, []storagev1.CSINodeDriver{{Name: drvName, NodeID: "id-node-a", TopologyKeys: []string{"topology.example.com/rack"},
		Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](16)}}}, cn.Spec.Drivers)
	require.Equal(t, "node-uid", string(cn.OwnerReferences[0].UID))
	n, err := e.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.JSONEq(t, `{"csi.example.com":"id-node-a"}`, n.Annotations["csi.volume.kubernetes.io/nodeid"])
	require.Equal(t, "r1", n.Labels["topology.example.com/rack"])
	require.Equal(t, []string{drvName}, e.drivers.Names())

	// A registration from another endpoint replaced it: the old one's
	// deregistration changes nothing.
	e.drivers.DeregisterPlugin(ctx, drvName, "/elsewhere.sock")
	require.Equal(t, []string{drvName}, e.drivers.Names())
	e.drivers.DeregisterPlugin(ctx, drvName, e.socket)
	require.Empty(t, e.drivers.Names())
	cn, err = e.client.StorageV1().CSINodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Empty(t, cn.Spec.Drivers)
	n, err = e.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, n.Annotations, "csi.volume.kubernetes.io/nodeid")
}

func TestValidatePlugin(t *testing.T) {
	d, err := csi.NewDrivers(csi.DriversConfig{})
	require.NoError(t, err)
	require.NoError(t, d.ValidatePlugin(drvName, "/x.sock", []string{"0.3.0", "v1.2.0"}))
	require.ErrorContains(t, d.ValidatePlugin(drvName, "/x.sock", []string{"0.3.0"}), "want 1.x")
	require.Error(t, d.ValidatePlugin("", "/x.sock", []string{"1.0.0"}))
}

func TestInlineVolume(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, &csitest.Driver{Stage: true}, ephemeralDriver()) // inline volumes are not staged
	p := pod("u1", inline("scratch"))
	dir := e.dir(p, "scratch")
	mnt, err := e.plugin.SetUp(ctx, volumes.Volume{Pod: p, Spec: &p.Spec.Volumes[0], Dir: dir})
	require.NoError(t, err)
	require.Equal(t, volumes.Mount{HostPath: filepath.Join(dir, "mount")}, mnt)
	calls := e.driver.Calls("NodePublishVolume")
	require.Len(t, calls, 1)
	req := calls[0].Request.(*csipb.NodePublishVolumeRequest)
	require.Equal(t, filepath.Join(dir, "mount"), req.TargetPath)
	require.Empty(t, req.StagingTargetPath)
	require.Equal(t, map[string]string{"size": "1Gi", "csi.storage.k8s.io/pod.name": "p-u1", "csi.storage.k8s.io/pod.namespace": "ns",
		"csi.storage.k8s.io/pod.uid": "u1", "csi.storage.k8s.io/serviceAccount.name": "sa", "csi.storage.k8s.io/ephemeral": "true"}, req.VolumeContext)
	require.Equal(t, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, req.VolumeCapability.AccessMode.Mode)
	require.FileExists(t, filepath.Join(dir, "vol_data.json"))

	// Set up again (every sync): nothing called.
	_, err = e.plugin.SetUp(ctx, volumes.Volume{Pod: p, Spec: &p.Spec.Volumes[0], Dir: dir})
	require.NoError(t, err)
	require.Len(t, e.driver.Calls("NodePublishVolume"), 1)
	require.Empty(t, e.plugin.InUse(), "an inline volume is not attachable")

	require.NoError(t, e.plugin.TearDown(ctx, dir))
	require.NoDirExists(t, dir)
	require.Empty(t, e.driver.Published())
	require.NoError(t, e.plugin.TearDown(ctx, dir), "again: nothing left to do")
}

func TestInlineVolumeRefusedWithoutEphemeralMode(t *testing.T) {
	e := newEnv(t, &csitest.Driver{}) // no CSIDriver object: persistent only
	p := pod("u1", inline("scratch"))
	_, err := e.plugin.SetUp(context.Background(), volumes.Volume{Pod: p, Spec: &p.Spec.Volumes[0], Dir: e.dir(p, "scratch")})
	require.ErrorContains(t, err, `volume mode "Ephemeral" not supported by driver csi.example.com (only supports ["Persistent"])`)
	require.Empty(t, e.driver.Calls("NodePublishVolume"))
}

func TestUnregisteredDriver(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, &csitest.Driver{}, ephemeralDriver())
	p := pod("u1", inline("scratch"))
	dir := e.dir(p, "scratch")
	_, err := e.plugin.SetUp(ctx, volumes.Volume{Pod: p, Spec: &p.Spec.Volumes[0], Dir: dir})
	require.NoError(t, err)
	e.drivers.DeregisterPlugin(ctx, drvName, e.socket)
	p2 := pod("u2", inline("scratch"))
	_, err = e.plugin.SetUp(ctx, volumes.Volume{Pod: p2, Spec: &p2.Spec.Volumes[0], Dir: e.dir(p2, "scratch")})
	require.ErrorContains(t, err, "driver name csi.example.com not found in the list of registered CSI drivers")
	// Teardown waits for the driver: the volume stays.
	require.ErrorContains(t, e.plugin.TearDown(ctx, dir), "not found in the list of registered CSI drivers")
	require.FileExists(t, filepath.Join(dir, "vol_data.json"))
	require.NoError(t, e.drivers.RegisterPlugin(ctx, drvName, e.socket, []string{"1.0.0"}))
	require.NoError(t, e.plugin.TearDown(ctx, dir))
	require.NoDirExists(t, dir)
}

func TestPublishErrors(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, &csitest.Driver{}, ephemeralDriver())
	p := pod("u1", inline("scratch"))
	dir := e.dir(p, "scratch")
	v := volumes.Volume{Pod: p, Spec: &p.Spec.Volumes[0], Dir: dir}

	// A final error: nothing was published, nothing is left.
	e.driver.Fail("NodePublishVolume", status.Error(codes.InvalidArgument, "bad attributes"))
	_, err := e.plugin.SetUp(ctx, v)
	require.ErrorContains(t, err, "rpc NodePublishVolume: rpc error: code = InvalidArgument desc = bad attributes")
	require.NoDirExists(t, dir)

	// An uncertain one: the volume data stays, so a teardown unpublishes.
	e.driver.Fail("NodePublishVolume", status.Error(codes.DeadlineExceeded, "slow"))
	_, err = e.plugin.SetUp(ctx, v)
	require.Error(t, err)
	require.FileExists(t, filepath.Join(dir, "vol_data.json"))
	require.NoError(t, e.plugin.TearDown(ctx, dir))
	require.Len(t, e.driver.Calls("NodeUnpublishVolume"), 1)
	require.NoDirExists(t, dir)

	e.driver.Fail("NodePublishVolume", nil)
	_, err = e.plugin.SetUp(ctx, v)
	require.NoError(t, err)
}

func TestHungPublishIsBoundedAndOthersProceed(t *testing.T) {
	ctx := context.Background()
	drv := &csitest.Driver{}
	e := newEnv(t, drv, ephemeralDriver())
	clk := testclock.NewFakeClock(time.Unix(1000, 0))
	var err error
	e.plugin, err = csi.New(csi.Config{RootDir: e.root, NodeName: nodeName, Drivers: e.drivers, Client: e.client,
		Mounter: volumes.DirOnly(), Clock: clk})
	require.NoError(t, err)
	release := drv.Hang("NodePublishVolume")
	defer release()
	p := pod("u1", inline("scratch"))
	done := make(chan error, 1)
	go func() {
		_, err := e.plugin.SetUp(ctx, volumes.Volume{Pod: p, Spec: &p.Spec.Volumes[0], Dir: e.dir(p, "scratch")})
		done <- err
	}()
	require.Eventually(t, func() bool { return len(drv.Calls("NodePublishVolume")) == 1 }, 5*time.Second, time.Millisecond)
	clk.Step(csi.DefaultTimeout)
	require.ErrorContains(t, <-done, "timed out after 2m0s")
	release()
	p2 := pod("u2", inline("scratch"))
	_, err = e.plugin.SetUp(ctx, volumes.Volume{Pod: p2, Spec: &p2.Spec.Volumes[0], Dir: e.dir(p2, "scratch")})
	require.NoError(t, err)
}

func persistentVolume(name, handle string) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PersistentVolumeSpec{
		AccessModes:  []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		MountOptions: []string{"noatime"},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: drvName, VolumeHandle: handle,
			FSType: "ext4", VolumeAttributes: map[string]string{"pool": "a"}, NodeStageSecretRef: &v1.SecretReference{Name: "stage", Namespace: "storage"}}}}}
}

func claimVolume(name string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}
}

func TestPersistentVolumeAttachStageAndShare(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, &csitest.Driver{Stage: true},
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "stage", Namespace: "storage"}, Data: map[string][]byte{"key": []byte("s3cr3t")}})
	pv := persistentVolume("pv-1", "vol-1")
	p1, p2 := pod("u1", claimVolume("data")), pod("u2", claimVolume("data"))
	p1.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To(int64(os.Getgid()))}
	v1of := func(p *v1.Pod) volumes.Volume {
		return volumes.Volume{Pod: p, Spec: &p.Spec.Volumes[0], Dir: e.dir(p, "data"), PV: pv}
	}

	// Not attached according to node status yet.
	_, err := e.plugin.SetUp(ctx, v1of(p1))
	require.ErrorContains(t, err, "volume kubernetes.io/csi/csi.example.com^vol-1 is not attached according to node status yet")
	n, _ := e.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	n.Status.VolumesAttached = []v1.AttachedVolume{{Name: "kubernetes.io/csi/csi.example.com^vol-1"}}
	_, err = e.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	// No CSIDriver object: attach required, so the VolumeAttachment counts.
	_, err = e.plugin.SetUp(ctx, v1of(p1))
	require.ErrorContains(t, err, "VolumeAttachment csi-")
	va := &storagev1.VolumeAttachment{Spec: storagev1.VolumeAttachmentSpec{Attacher: drvName, NodeName: nodeName},
		Status: storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"device": "/dev/x"}}}
	va.Name = attachmentNameForTest("vol-1")
	_, err = e.client.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{})
	require.NoError(t, err)

	mnt, err := e.plugin.SetUp(ctx, v1of(p1))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(e.dir(p1, "data"), "mount"), mnt.HostPath)
	stage := e.driver.Calls("NodeStageVolume")
	require.Len(t, stage, 1)
	sreq := stage[0].Request.(*csipb.NodeStageVolumeRequest)
	require.Regexp(t, `/plugins/kubernetes.io/csi/csi.example.com/[0-9a-f]{64}/globalmount$`, sreq.StagingTargetPath)
	require.Equal(t, map[string]string{"device": "/dev/x"}, sreq.PublishContext)
	require.Equal(t, map[string]string{"key": "s3cr3t"}, sreq.Secrets)
	require.Equal(t, "ext4", sreq.VolumeCapability.GetMount().FsType)
	require.Equal(t, []string{"noatime"}, sreq.VolumeCapability.GetMount().MountFlags)
	preq := e.driver.Calls("NodePublishVolume")[0].Request.(*csipb.NodePublishVolumeRequest)
	require.Equal(t, sreq.StagingTargetPath, preq.StagingTargetPath)
	require.Equal(t, map[string]string{"pool": "a"}, preq.VolumeContext, "no pod info without podInfoOnMount")
	require.Equal(t, []v1.UniqueVolumeName{"kubernetes.io/csi/csi.example.com^vol-1"}, e.plugin.InUse())

	// A second pod on the same volume: staged once.
	_, err = e.plugin.SetUp(ctx, v1of(p2))
	require.NoError(t, err)
	require.Len(t, e.driver.Calls("NodeStageVolume"), 1)
	require.Len(t, e.driver.Calls("NodePublishVolume"), 2)

	// The agent restarts; the first pod goes: unpublished, still staged.
	e.restart(t)
	require.NoError(t, e.plugin.TearDown(ctx, e.dir(p1, "data")))
	require.Empty(t, e.driver.Calls("NodeUnstageVolume"))
	require.Len(t, e.driver.Staged(), 1)
	require.Equal(t, []v1.UniqueVolumeName{"kubernetes.io/csi/csi.example.com^vol-1"}, e.plugin.InUse())
	// The second goes: unstaged too.
	require.NoError(t, e.plugin.TearDown(ctx, e.dir(p2, "data")))
	require.Len(t, e.driver.Calls("NodeUnstageVolume"), 1)
	require.Empty(t, e.driver.Staged())
	require.Empty(t, e.driver.Published())
	require.NoDirExists(t, filepath.Dir(sreq.StagingTargetPath))
	require.Empty(t, e.plugin.InUse())
}

func TestCleanupStagedAfterAStopBetweenStageAndPublish(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, &csitest.Driver{Stage: true}, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: drvName},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}})
	// attachRequired: false: not attachable, nothing in node status to wait for.
	pv := persistentVolume("pv-1", "vol-1")
	pv.Spec.CSI.NodeStageSecretRef = nil
	p := pod("u1", claimVolume("data"))
	var err error
	e.driver.Fail("NodePublishVolume", errors.New("agent killed here"))
	_, err = e.plugin.SetUp(ctx, volumes.Volume{Pod: p, Spec: &p.Spec.Volumes[0], Dir: e.dir(p, "data"), PV: pv})
	require.Error(t, err)
	require.Len(t, e.driver.Staged(), 1)
	e.driver.Fail("NodePublishVolume", nil)
	// As if the agent had stopped before it wrote the pod's volume data.
	require.NoError(t, os.RemoveAll(filepath.Join(e.root, "pods")))

	// The next agent unstages what nothing uses.
	e.restart(t)
	require.NoError(t, e.plugin.CleanupStaged(ctx))
	require.Empty(t, e.driver.Staged())
	require.Len(t, e.driver.Calls("NodeUnstageVolume"), 1)
	require.NoError(t, e.plugin.CleanupStaged(ctx))
	require.Len(t, e.driver.Calls("NodeUnstageVolume"), 1)
}
