package volumes_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekit/nodekit/volumes"
)

// A pod with a downward API volume: SetUpPod writes the files before the
// containers start, ContainerMounts says where the runtime mounts them, and
// TearDownPod removes them once the pod is gone.
func Example() {
	root, _ := os.MkdirTemp("", "volumes-example-")
	defer os.RemoveAll(root)
	m, err := volumes.New(volumes.Config{RootDir: root, Mounter: volumes.DirOnly()})
	if err != nil {
		panic(err)
	}

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "0b7c", Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
				Items: []v1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}},
			}}}},
			Containers: []v1.Container{{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "info", MountPath: "/etc/podinfo"}}}},
		},
	}
	ctx := context.Background()
	if err := m.SetUpPod(ctx, pod); err != nil {
		panic(err)
	}
	mounts, err := m.ContainerMounts(ctx, pod, &pod.Spec.Containers[0], nil)
	if err != nil {
		panic(err)
	}
	b, _ := os.ReadFile(filepath.Join(mounts[0].HostPath, "labels"))
	fmt.Printf("%s read-only=%v: %s\n", mounts[0].ContainerPath, mounts[0].Readonly, b)

	if err := m.TearDownPod(ctx, pod.UID); err != nil {
		panic(err)
	}
	_, err = os.Stat(m.PodDir(pod.UID))
	fmt.Println("gone:", os.IsNotExist(err))
	// Output:
	// /etc/podinfo read-only=true: app="web"
	// gone: true
}

// hostDirs is a host's own volume type: each persistentVolumeClaim is a
// directory of the node named after the claim.
type hostDirs struct{ base string }

func (hostDirs) Name() string                 { return "example.com~host-dirs" }
func (hostDirs) CanSupport(v *v1.Volume) bool { return v.PersistentVolumeClaim != nil }
func (h hostDirs) SetUp(_ context.Context, v volumes.Volume) (volumes.Mount, error) {
	dir := filepath.Join(h.base, filepath.Base(v.Spec.PersistentVolumeClaim.ClaimName))
	return volumes.Mount{HostPath: dir, ReadOnly: v.Spec.PersistentVolumeClaim.ReadOnly}, os.MkdirAll(dir, 0o750)
}

// A host registers its own volume type; the Manager serves it beside the
// built-in ones.
func ExamplePlugin() {
	root, _ := os.MkdirTemp("", "volumes-plugin-")
	defer os.RemoveAll(root)
	m, err := volumes.New(volumes.Config{RootDir: filepath.Join(root, "kubelet"), Mounter: volumes.DirOnly(),
		Plugins: []volumes.Plugin{hostDirs{base: filepath.Join(root, "claims")}}})
	if err != nil {
		panic(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", UID: "9f1e"},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "db-data"}}}},
			Containers: []v1.Container{{Name: "db", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/var/lib/db"}}}},
		}}
	ctx := context.Background()
	if err := m.SetUpPod(ctx, pod); err != nil {
		panic(err)
	}
	mounts, err := m.ContainerMounts(ctx, pod, &pod.Spec.Containers[0], nil)
	if err != nil {
		panic(err)
	}
	rel, _ := filepath.Rel(root, mounts[0].HostPath)
	fmt.Println(mounts[0].ContainerPath, "<-", rel)
	// Output: /var/lib/db <- claims/db-data
}

// Usage reports each volume of a pod: an emptyDir by what it holds, a
// claim's volume (here a local PersistentVolume) by its filesystem, with
// the claim, as the kubelet's volume stats (and so
// kubelet_volume_stats_*) report them.
func ExampleManager_Usage() {
	root, _ := os.MkdirTemp("", "volumes-usage-")
	defer os.RemoveAll(root)
	disk := filepath.Join(root, "disk1") // a local volume's path on the node
	_ = os.Mkdir(disk, 0o750)
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-db-0", Namespace: "shop", UID: "c1"},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "local-pv"}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "local-pv"}, Spec: v1.PersistentVolumeSpec{
		PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: disk}},
		ClaimRef:               &v1.ObjectReference{Namespace: "shop", Name: "data-db-0", UID: "c1"}}}
	m, err := volumes.New(volumes.Config{RootDir: filepath.Join(root, "kubelet"), Mounter: volumes.DirOnly(),
		Client: fake.NewClientset(claim, pv)})
	if err != nil {
		panic(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "shop", UID: "9f1e"},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{
				{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}}},
				{Name: "tmp", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			},
			Containers: []v1.Container{{Name: "db", VolumeMounts: []v1.VolumeMount{
				{Name: "data", MountPath: "/var/lib/db"}, {Name: "tmp", MountPath: "/tmp"}}}},
		}}
	if err := m.SetUpPod(context.Background(), pod); err != nil {
		panic(err)
	}
	for _, u := range m.Usage(pod.UID) {
		fmt.Printf("%s: claim %v, filesystem known %v, local ephemeral %v\n", u.Name, u.PVC, u.CapacityBytes > 0, u.LocalEphemeral)
	}
	// Output:
	// data: claim shop/data-db-0, filesystem known true, local ephemeral false
	// tmp: claim <nil>, filesystem known true, local ephemeral true
}
