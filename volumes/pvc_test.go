package volumes

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func boundClaim(name, pv string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("pvc-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: pv}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
}

func pvFor(name string, claim *v1.PersistentVolumeClaim, src v1.PersistentVolumeSource) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: src}}
	if claim != nil {
		pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID}
	}
	return pv
}

func TestPersistentVolumeClaims(t *testing.T) {
	ctx := context.Background()
	dir, local := t.TempDir(), t.TempDir()
	hostClaim, localClaim := boundClaim("host", "pv-host"), boundClaim("local", "pv-local")
	objs := []runtime.Object{
		hostClaim, pvFor("pv-host", hostClaim, v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: filepath.Join(dir, "data"),
			Type: ptr.To(v1.HostPathDirectoryOrCreate)}}),
		localClaim, pvFor("pv-local", localClaim, v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: local}}),
	}
	e := newEnv(t, objs...)
	pod := testPod(claimVolume("h", "host", false), claimVolume("l", "local", true))
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "h", MountPath: "/h"}, {Name: "l", MountPath: "/l"}}
	require.NoError(t, e.m.SetUpPod(ctx, pod))
	mounts, err := e.m.ContainerMounts(ctx, pod, &pod.Spec.Containers[0], nil)
	require.NoError(t, err)
	require.Len(t, mounts, 2)
	assert.Equal(t, filepath.Join(dir, "data"), mounts[0].HostPath, "the hostPath PV's path, created as its type asks")
	assert.DirExists(t, filepath.Join(dir, "data"))
	assert.False(t, mounts[0].Readonly)
	assert.Equal(t, local, mounts[1].HostPath)
	assert.True(t, mounts[1].Readonly, "the pod's read-only claim")

	// Resolved once: later syncs read nothing from the API.
	e.client.ClearActions()
	require.NoError(t, e.m.SetUpPod(ctx, pod))
	for _, a := range e.client.Actions() {
		assert.NotContains(t, []string{"persistentvolumeclaims", "persistentvolumes"}, a.GetResource().Resource)
	}
	assert.Equal(t, []v1.UniqueVolumeName{"kubernetes.io/local-volume/pv-local"}, e.m.InUse(), "a local PV is device-mounted: in use")
	require.NoError(t, e.m.TearDownPod(ctx, pod.UID))
	assert.Empty(t, e.m.InUse())
	assert.DirExists(t, local, "a persistent volume outlives the pod")
}

func TestPersistentVolumeClaimFailures(t *testing.T) {
	ctx := context.Background()
	pending := boundClaim("pending", "")
	pending.Status.Phase = v1.ClaimPending
	deleting := boundClaim("deleting", "pv-x")
	deleting.DeletionTimestamp = &metav1.Time{}
	deleting.Finalizers = []string{"example.com/keep"}
	stolen := boundClaim("stolen", "pv-stolen")
	csi, nfs, block := boundClaim("csi", "pv-csi"), boundClaim("nfs", "pv-nfs"), boundClaim("block", "pv-block")
	blockPV := pvFor("pv-block", block, v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/dev/sdz"}})
	blockPV.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock)
	far := boundClaim("far", "pv-far")
	farPV := pvFor("pv-far", far, v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: t.TempDir()}})
	farPV.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{"other"}}}}}}}
	e := newEnv(t, pending, deleting, stolen, pvFor("pv-stolen", boundClaim("someone-else", ""), v1.PersistentVolumeSource{}),
		csi, pvFor("pv-csi", csi, v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com"}}),
		nfs, pvFor("pv-nfs", nfs, v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}}),
		block, blockPV, far, farPV)
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"kubernetes.io/hostname": "n1"}}}
	e.m.cfg.Node = func() *v1.Node { return node }
	for claim, want := range map[string]string{
		"missing":  `error processing PVC ns/missing: failed to fetch PVC from API server: persistentvolumeclaims "missing" not found`,
		"pending":  "error processing PVC ns/pending: PVC is not bound",
		"deleting": "error processing PVC ns/deleting: PVC is being deleted",
		"stolen":   "error processing PVC ns/stolen: found PV object pv-stolen but its pv.Spec.ClaimRef.UID pvc-someone-else does not point to claim.UID pvc-stolen",
		"csi":      "PersistentVolume pv-csi: volume type csi (driver ebs.csi.aws.com) is not supported by this node agent",
		"nfs":      "PersistentVolume pv-nfs: volume type nfs is not supported by this node agent",
		"block":    "volume v: volumeMode Block (raw block devices) is not supported by this node agent",
		"far":      `MountVolume.NodeAffinity check failed for volume "pv-far" : no matching NodeSelectorTerms`,
	} {
		pod := testPod(claimVolume("v", claim, false))
		pod.UID = types.UID("uid-" + claim)
		if claim == "block" { // used as a device, as a Block volume must be
			pod.Spec.Containers[0].VolumeMounts = nil
			pod.Spec.Containers[0].VolumeDevices = []v1.VolumeDevice{{Name: "v", DevicePath: "/dev/v"}}
		}
		err := e.m.SetUpPod(ctx, pod)
		require.Error(t, err, claim)
		assert.Contains(t, err.Error(), want, claim)
	}

	// A Block volume named in volumeMounts, a Filesystem one in volumeDevices.
	pod := testPod(claimVolume("v", "block", false))
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "v", MountPath: "/v"}}
	assert.ErrorContains(t, e.m.SetUpPod(ctx, pod), "volume v has volumeMode Block, but is specified in volumeMounts")
	pod = testPod(claimVolume("v", "far", false))
	pod.UID = "uid-dev"
	pod.Spec.Containers[0].VolumeDevices = []v1.VolumeDevice{{Name: "v", DevicePath: "/dev/xvda"}}
	assert.ErrorContains(t, e.m.SetUpPod(ctx, pod), "volume v has volumeMode Filesystem, but is specified in volumeDevices")

	// Without a client (a standalone node) a claim cannot be read.
	m, err := New(Config{RootDir: t.TempDir(), Mounter: e.mounter})
	require.NoError(t, err)
	assert.ErrorContains(t, m.SetUpPod(ctx, testPod(claimVolume("v", "c", false))), "no API client to read the claim")
}

func TestGenericEphemeralVolume(t *testing.T) {
	ctx := context.Background()
	pod := testPod(v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}})
	claim := boundClaim("p-scratch", "pv-eph") // <pod>-<volume>
	claim.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}}
	path := t.TempDir()
	foreign := boundClaim("q-scratch", "pv-eph2")
	e := newEnv(t, claim, pvFor("pv-eph", claim, v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: path}}),
		foreign, pvFor("pv-eph2", foreign, v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: path}}))
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/s"}}
	require.NoError(t, e.m.SetUpPod(ctx, pod))
	mounts, err := e.m.ContainerMounts(ctx, pod, &pod.Spec.Containers[0], nil)
	require.NoError(t, err)
	assert.Equal(t, path, mounts[0].HostPath)

	other := testPod(v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}})
	other.Name, other.UID = "q", "uid-q"
	assert.ErrorContains(t, e.m.SetUpPod(ctx, other), "PVC ns/q-scratch was not created for pod ns/q (pod is not owner)")
}

// A ReadWriteOncePod volume mounted by one pod is refused to another on
// the node, with the kubelet's message, until the first is torn down.
func TestReadWriteOncePod(t *testing.T) {
	ctx := context.Background()
	claim := boundClaim("only", "pv-only")
	pv := pvFor("pv-only", claim, v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: t.TempDir()}})
	pv.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}
	e := newEnv(t, claim, pv)
	first := testPod(claimVolume("data", "only", false))
	second := testPod(claimVolume("data", "only", false))
	second.Name, second.UID = "p2", "uid-2"
	require.NoError(t, e.m.SetUpPod(ctx, first))
	err := e.m.SetUpPod(ctx, second)
	require.ErrorContains(t, err, `MountVolume.SetUp failed for volume "data" : volume uses the ReadWriteOncePod access mode and is already in use by another pod`)
	require.NoError(t, e.m.SetUpPod(ctx, first), "the owner syncs on")
	require.NoError(t, e.m.TearDownPod(ctx, first.UID))
	require.NoError(t, e.m.SetUpPod(ctx, second))
}
