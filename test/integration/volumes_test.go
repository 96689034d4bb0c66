package integration

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
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/objects"
	"github.com/nodekit/nodekit/volumes"
)

// TestVolumesAsNodeIdentity runs the reference agent's volume manager as
// system:node:<name> against the real Node authorizer: configMaps and
// service account tokens of its own pods work, the configMap of another
// node's pod is refused, and a configMap update reaches the volume.
func TestVolumesAsNodeIdentity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := srv.AdminClient()
	const ns, nodeA, nodeB = "volumes-node-identity", "volumes-node-a", "volumes-node-b"
	_, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	ensureDefaultServiceAccount(t, admin, ns) // the API server adds a kube-api-access volume to each pod
	for _, n := range []string{nodeA, nodeB} {
		_, err := admin.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for _, name := range []string{"cm-a", "cm-b"} {
		_, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string]string{"key": name + "-v1"}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	pod := func(name, node, cm string) *v1.Pod {
		p, err := admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Image: "busybox",
				VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}, {Name: "token", MountPath: "/token"}}}},
				Volumes: []v1.Volume{
					{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
						LocalObjectReference: v1.LocalObjectReference{Name: cm}}}},
					{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
						{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", Audience: "test-aud", ExpirationSeconds: ptr.To[int64](3600)}}}}}},
				}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		return p
	}
	podA, podB := pod("on-a", nodeA, "cm-a"), pod("on-b", nodeB, "cm-b")

	root := t.TempDir()
	nodeClient := srv.NodeClient(nodeA)
	objs, err := objects.New(objects.Config{Client: nodeClient})
	require.NoError(t, err)
	defer objs.Stop()
	m, err := volumes.New(volumes.Config{RootDir: root, Objects: objs, Client: nodeClient, Mounter: volumes.DirOnly()})
	require.NoError(t, err)
	setUp := func(p *v1.Pod) error {
		objs.Register(ctx, p)
		return m.SetUpPod(ctx, p)
	}

	require.NoError(t, setUp(podA))
	cfgDir := filepath.Join(m.PodDir(podA.UID), "volumes", "kubernetes.io~configmap", "cfg")
	read := func(p string) string {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, "cm-a-v1", read(filepath.Join(cfgDir, "key")))
	token := read(filepath.Join(m.PodDir(podA.UID), "volumes", "kubernetes.io~projected", "token", "token"))
	assert.NotEmpty(t, token, "TokenRequest for its own pod's service account")

	err = setUp(podB)
	require.Error(t, err, "another node's pod")
	assert.Contains(t, err.Error(), "forbidden")
	assert.NoDirExists(t, filepath.Join(m.PodDir(podB.UID), "volumes", "kubernetes.io~configmap", "cfg", "..data"))

	cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, "cm-a", metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data["key"] = "cm-a-v2"
	_, err = admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		require.NoError(t, setUp(podA))
		return read(filepath.Join(cfgDir, "key")) == "cm-a-v2"
	}, 30*time.Second, 50*time.Millisecond, "the update arrives through the watch")

	require.NoError(t, m.TearDownPod(ctx, podA.UID))
	objs.Unregister(podA.UID)
	assert.NoDirExists(t, m.PodDir(podA.UID))
}

// TestPersistentVolumeClaimsAsNodeIdentity resolves a pod's claim to its
// hostPath PersistentVolume as the node (the Node authorizer grants a node
// the claims of its pods and the volumes bound to them), and is refused the
// claim of another node's pod.
func TestPersistentVolumeClaimsAsNodeIdentity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := srv.AdminClient()
	const ns, nodeA, nodeB = "pvc-node-identity", "pvc-node-a", "pvc-node-b"
	_, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	ensureDefaultServiceAccount(t, admin, ns)
	for _, n := range []string{nodeA, nodeB} {
		_, err := admin.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	dir := t.TempDir()
	bind := func(claim, pvName, path string) {
		pvc, err := admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim},
			Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, VolumeName: pvName,
				StorageClassName: ptr.To(""),
				Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}},
			metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = admin.CoreV1().PersistentVolumes().Create(ctx, &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName},
			Spec: v1.PersistentVolumeSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: "",
				Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
				ClaimRef:               &v1.ObjectReference{Namespace: ns, Name: claim, UID: pvc.UID},
				PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: path, Type: ptr.To(v1.HostPathDirectoryOrCreate)}}}},
			metav1.CreateOptions{})
		require.NoError(t, err)
		// No PV controller runs here: bind the claim as it would.
		pvc.Status.Phase = v1.ClaimBound
		_, err = admin.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	bind("data-a", "pvc-node-identity-a", filepath.Join(dir, "a"))
	bind("data-b", "pvc-node-identity-b", filepath.Join(dir, "b"))
	pod := func(name, node, claim string) *v1.Pod {
		p, err := admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1.PodSpec{NodeName: node, AutomountServiceAccountToken: ptr.To(false), Containers: []v1.Container{{Name: "c", Image: "busybox",
				VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}},
			metav1.CreateOptions{})
		require.NoError(t, err)
		return p
	}
	podA, podB := pod("on-a", nodeA, "data-a"), pod("on-b", nodeB, "data-b")

	m, err := volumes.New(volumes.Config{RootDir: t.TempDir(), Client: srv.NodeClient(nodeA), Mounter: volumes.DirOnly()})
	require.NoError(t, err)
	require.NoError(t, m.SetUpPod(ctx, podA))
	mounts, err := m.ContainerMounts(ctx, podA, &podA.Spec.Containers[0], nil)
	require.NoError(t, err)
	require.Len(t, mounts, 1)
	assert.Equal(t, filepath.Join(dir, "a"), mounts[0].HostPath)
	assert.DirExists(t, filepath.Join(dir, "a"))

	err = m.SetUpPod(ctx, podB)
	require.Error(t, err, "another node's claim")
	assert.Contains(t, err.Error(), "forbidden")
	assert.NoDirExists(t, filepath.Join(dir, "b"))
}
