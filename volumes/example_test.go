package volumes_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit/nodekit/volumes"
)

// A pod with a downward API volume: SetUpPod writes the files before the
// containers start, ContainerMounts says where the runtime mounts them, and
// TearDownPod removes them once the pod is gone.
func Example() {
	root, _ := os.MkdirTemp("", "volumes-example-")
	defer os.RemoveAll(root)
	m, err := volumes.New(volumes.Config{RootDir: root, Mounter: volumes.DirOnly})
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
