package volumestest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/volumes/volumestest"
)

func pod(uid string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Spec: v1.PodSpec{
		Volumes:    []v1.Volume{{Name: "data"}},
		Containers: []v1.Container{{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "x", ReadOnly: true}}}}}}
}

func TestVolumes(t *testing.T) {
	ctx := context.Background()
	v := &volumestest.Volumes{Root: "/var/lib/kubelet/pods", SetUpErr: func(p *v1.Pod) error {
		if p.UID == "bad" {
			return errors.New("no such secret")
		}
		return nil
	}}
	a := pod("a")
	_, err := v.ContainerMounts(ctx, a, &a.Spec.Containers[0], nil)
	require.ErrorContains(t, err, "not set up")
	require.NoError(t, v.SetUpPod(ctx, a))
	require.ErrorContains(t, v.SetUpPod(ctx, pod("bad")), "no such secret")
	require.False(t, v.SetUp("bad"))
	mounts, err := v.ContainerMounts(ctx, a, &a.Spec.Containers[0], nil)
	require.NoError(t, err)
	require.Len(t, mounts, 1)
	require.Equal(t, "/var/lib/kubelet/pods/a/volumes/data/x", mounts[0].HostPath)
	require.True(t, mounts[0].Readonly)
	undeclared := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "other"}}}
	_, err = v.ContainerMounts(ctx, a, undeclared, nil)
	require.ErrorContains(t, err, "does not declare")

	require.NoError(t, v.SetUpPod(ctx, pod("b")))
	require.NoError(t, v.TearDownPod(ctx, "b"))
	require.NoError(t, v.CleanupOrphans(ctx, func(types.UID) bool { return false }))
	require.False(t, v.SetUp("a"))
	require.Equal(t, []string{"SetUpPod a", "SetUpPod bad", "SetUpPod b", "TearDownPod b", "CleanupOrphans a"}, v.Calls())
}

// A test hands the fake to the block under test (podsyncer.Config.Volumes)
// and reads what it asked for.
func ExampleVolumes() {
	v := &volumestest.Volumes{Root: "/pods"}
	p := pod("uid-1")
	_ = v.SetUpPod(context.Background(), p)
	mounts, _ := v.ContainerMounts(context.Background(), p, &p.Spec.Containers[0], nil)
	fmt.Println(mounts[0].HostPath, v.Calls())
	// Output: /pods/uid-1/volumes/data/x [SetUpPod uid-1]
}
