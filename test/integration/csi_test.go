package integration

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/pluginwatch"
	"github.com/nodekit/nodekit/volumes"
	"github.com/nodekit/nodekit/volumes/csi"
	"github.com/nodekit/nodekit/volumes/csi/csitest"
)

// TestCSIAsNodeIdentity registers a CSI driver through the registration
// directory and mounts a pod's claim on a CSI PersistentVolume, all as
// system:node:<name> against the real Node authorizer and NodeRestriction:
// the CSINode, the node annotation and topology label, the CSIDriver, the
// claim and volume, the VolumeAttachment and the stage secret are what a
// node may read and write.
func TestCSIAsNodeIdentity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := srv.AdminClient()
	const ns, node, driverName = "csi-node-identity", "csi-node-a", "csi.nodekit.test"
	_, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	ensureDefaultServiceAccount(t, admin, ns)
	_, err = admin.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driverName},
		Spec: storagev1.CSIDriverSpec{PodInfoOnMount: ptr.To(true)}}, metav1.CreateOptions{}) // attach required
	require.NoError(t, err)
	_, err = admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "csi-secrets"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.CoreV1().Secrets("csi-secrets").Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "stage"},
		Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{})
	require.NoError(t, err)

	// The driver registers as the node.
	nodeClient := srv.NodeClient(node)
	sockDir, err := os.MkdirTemp("", "csi")
	require.NoError(t, err)
	defer func() { _ = os.RemoveAll(sockDir) }()
	drv := &csitest.Driver{Name: driverName, NodeID: "backend-" + node, Stage: true, MaxVolumes: 8,
		Topology: map[string]string{"topology.nodekit.test/zone": "z1"}}
	require.NoError(t, drv.Serve(filepath.Join(sockDir, "reg.sock")))
	defer drv.Stop()
	drivers, err := csi.NewDrivers(csi.DriversConfig{Client: nodeClient, NodeName: node})
	require.NoError(t, err)
	defer drivers.Close()
	require.NoError(t, drivers.InitCSINode(ctx))
	w, err := pluginwatch.New(pluginwatch.Config{Dir: sockDir, Handlers: map[string]pluginwatch.Handler{registerapi.CSIPlugin: drivers}})
	require.NoError(t, err)
	require.NoError(t, w.Sync(ctx))
	cn, err := admin.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, cn.Spec.Drivers, 1)
	require.Equal(t, "backend-"+node, cn.Spec.Drivers[0].NodeID)
	require.Equal(t, int32(8), *cn.Spec.Drivers[0].Allocatable.Count)
	n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "z1", n.Labels["topology.nodekit.test/zone"])
	require.JSONEq(t, `{"csi.nodekit.test":"backend-csi-node-a"}`, n.Annotations["csi.volume.kubernetes.io/nodeid"])

	// A claim bound to a CSI volume, attached by the attach/detach
	// controller (played here by the admin: no controller runs).
	pvc, err := admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, VolumeName: "csi-pv-a",
			StorageClassName: ptr.To(""),
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.CoreV1().PersistentVolumes().Create(ctx, &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "csi-pv-a"},
		Spec: v1.PersistentVolumeSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: "",
			Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			ClaimRef: &v1.ObjectReference{Namespace: ns, Name: "data", UID: pvc.UID},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driverName, VolumeHandle: "vol-a",
				NodeStageSecretRef: &v1.SecretReference{Namespace: "csi-secrets", Name: "stage"}}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	pvc.Status.Phase = v1.ClaimBound
	_, err = admin.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
	require.NoError(t, err)
	pod, err := admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: v1.PodSpec{NodeName: node, AutomountServiceAccountToken: ptr.To(false), Containers: []v1.Container{{Name: "c", Image: "busybox",
			VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	va, err := admin.StorageV1().VolumeAttachments().Create(ctx, &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: attachmentName("vol-a", driverName, node)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: driverName, NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("csi-pv-a")}}}, metav1.CreateOptions{})
	require.NoError(t, err)

	root := t.TempDir()
	plugin, err := csi.New(csi.Config{RootDir: root, NodeName: node, Drivers: drivers, Client: nodeClient, Mounter: volumes.DirOnly()})
	require.NoError(t, err)
	m, err := volumes.New(volumes.Config{RootDir: root, Client: nodeClient, Plugins: []volumes.Plugin{plugin}, Mounter: volumes.DirOnly()})
	require.NoError(t, err)
	err = m.SetUpPod(ctx, pod)
	require.ErrorContains(t, err, "is not attached according to node status yet")

	n.Status.VolumesAttached = []v1.AttachedVolume{{Name: "kubernetes.io/csi/csi.nodekit.test^vol-a"}}
	_, err = admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	va.Status = storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"lun": "3"}}
	_, err = admin.StorageV1().VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, m.SetUpPod(ctx, pod))
	require.Len(t, drv.Published(), 1)
	require.Equal(t, []v1.UniqueVolumeName{"kubernetes.io/csi/csi.nodekit.test^vol-a"}, plugin.InUse())

	require.NoError(t, m.TearDownPod(ctx, pod.UID))
	require.Empty(t, drv.Published())
	require.Empty(t, drv.Staged())
	require.Empty(t, plugin.InUse())

	// The driver goes: deregistered, its CSINode entry removed.
	drv.Stop()
	require.NoError(t, w.Sync(ctx))
	cn, err = admin.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	require.Empty(t, cn.Spec.Drivers)
}

// attachmentName is the attach/detach controller's VolumeAttachment name.
func attachmentName(handle, driver, node string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+driver+node)))
}
