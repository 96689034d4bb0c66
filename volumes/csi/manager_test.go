package csi_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/volumes"
	"github.com/nodekit/nodekit/volumes/csi"
	"github.com/nodekit/nodekit/volumes/csi/csitest"
)

// A claim bound to a CSI PersistentVolume goes through the volume
// manager: resolved as the node, published, mounted read-only as the
// claim says, torn down with the pod.
func TestClaimThroughTheVolumeManager(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, &csitest.Driver{Stage: true}, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: drvName},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true)}})
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "claim-uid"},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	pv := persistentVolume("pv-1", "vol-1")
	pv.Spec.CSI.NodeStageSecretRef = nil
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "c", UID: "claim-uid"}
	_, err := e.client.CoreV1().PersistentVolumeClaims("ns").Create(ctx, claim, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = e.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	require.NoError(t, err)
	// attachRequired: false: not attachable, nothing in node status to wait for.

	vm, err := volumes.New(volumes.Config{RootDir: e.root, Client: e.client, Plugins: []volumes.Plugin{e.plugin}, Mounter: volumes.DirOnly()})
	require.NoError(t, err)
	p := pod("0b1c7a9e-0000-4000-8000-000000000002", v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c", ReadOnly: true}}})
	p.Spec.Containers = []v1.Container{{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}}
	require.NoError(t, vm.SetUpPod(ctx, p))
	mounts, err := vm.ContainerMounts(ctx, p, &p.Spec.Containers[0], nil)
	require.NoError(t, err)
	target := filepath.Join(e.root, "pods", string(p.UID), "volumes", csi.PluginName, "data", "mount")
	require.Len(t, mounts, 1)
	require.Equal(t, target, mounts[0].HostPath)
	require.True(t, mounts[0].Readonly)
	req := e.driver.Calls("NodePublishVolume")[0].Request.(*csipb.NodePublishVolumeRequest)
	require.True(t, req.Readonly)
	require.Equal(t, "false", req.VolumeContext["csi.storage.k8s.io/ephemeral"])
	require.Equal(t, map[string]string{target: "vol-1"}, e.driver.Published())

	require.NoError(t, vm.TearDownPod(ctx, p.UID))
	require.Empty(t, e.driver.Published())
	require.Empty(t, e.driver.Staged())
	_, err = os.Stat(filepath.Join(e.root, "pods", string(p.UID)))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// A CSI PersistentVolume whose node affinity does not select the node is
// refused by the volume manager before its driver is called, with the
// kubelet's message; without the node it is refused too.
func TestClaimWithNodeAffinityElsewhere(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, &csitest.Driver{}, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: drvName},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}})
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "claim-uid"},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	pv := persistentVolume("pv-1", "vol-1")
	pv.Spec.CSI.NodeStageSecretRef = nil
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "c", UID: "claim-uid"}
	pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: "topology.kubernetes.io/zone", Operator: v1.NodeSelectorOpIn, Values: []string{"z2"}}}}}}}
	_, err := e.client.CoreV1().PersistentVolumeClaims("ns").Create(ctx, claim, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = e.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	require.NoError(t, err)
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{"topology.kubernetes.io/zone": "z1"}}}
	for _, tc := range []struct {
		name string
		node func() *v1.Node
		want string
	}{
		{name: "another zone", node: func() *v1.Node { return node },
			want: `MountVolume.NodeAffinity check failed for volume "pv-1" : no matching NodeSelectorTerms`},
		{name: "no node", want: `MountVolume.NodeAffinity check failed for volume "pv-1" : volumes: the node is not known`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vm, err := volumes.New(volumes.Config{RootDir: e.root, Client: e.client, Plugins: []volumes.Plugin{e.plugin},
				Mounter: volumes.DirOnly(), Node: tc.node})
			require.NoError(t, err)
			p := pod("0b1c7a9e-0000-4000-8000-000000000003", v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}})
			p.Spec.Containers = []v1.Container{{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}}
			require.ErrorContains(t, vm.SetUpPod(ctx, p), tc.want)
			require.Empty(t, e.driver.Calls("NodeGetCapabilities", "NodeStageVolume", "NodePublishVolume"))
		})
	}
}
