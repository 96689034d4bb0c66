package objects

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func podWith(uid string, cms ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID("uid-" + uid)}}
	for _, cm := range cms {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: cm, VolumeSource: v1.VolumeSource{
			ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cm}}}})
	}
	return p
}

func TestRegisterSharesAndReleasesWatches(t *testing.T) {
	client := fake.NewClientset(
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Data: map[string]string{"k": "1"}},
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}, Data: map[string]string{"k": "2"}},
	)
	c, err := New(Config{Client: client})
	require.NoError(t, err)
	defer c.Stop()
	ctx := context.Background()

	_, err = c.ConfigMap(ctx, "ns", "a")
	assert.EqualError(t, err, `object "ns"/"a" not registered`)

	p1, p2 := podWith("1", "a"), podWith("2", "a", "b")
	c.Register(ctx, p1)
	c.Register(ctx, p2)
	c.Register(ctx, p2) // again, as on every sync: no extra reference
	cm, err := c.ConfigMap(ctx, "ns", "b")
	require.NoError(t, err)
	assert.Equal(t, "2", cm.Data["k"], "the other object of the same namespace is not mixed in")
	c.mu.Lock()
	assert.Equal(t, 2, c.objects[objectKey{kind: kindConfigMap, namespace: "ns", name: "a"}].refs)
	c.mu.Unlock()

	c.Unregister(p2.UID)
	_, err = c.ConfigMap(ctx, "ns", "b")
	assert.Error(t, err, "b's watch ended with its last pod")
	_, err = c.ConfigMap(ctx, "ns", "a")
	assert.NoError(t, err, "a is still used by pod 1")

	c.Register(ctx, podWith("3", "absent"))
	_, err = c.ConfigMap(ctx, "ns", "absent")
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.EqualError(t, err, `configmap "absent" not found`)
}

func TestImmutableObjectStopsItsWatch(t *testing.T) {
	yes := true
	client := fake.NewClientset(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Immutable: &yes,
		Data: map[string][]byte{"k": []byte("v")}})
	c, err := New(Config{Client: client})
	require.NoError(t, err)
	defer c.Stop()
	ctx := context.Background()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "s"}}}}}}}}
	c.Register(ctx, pod)
	s, err := c.Secret(ctx, "ns", "s")
	require.NoError(t, err)
	assert.Equal(t, "v", string(s.Data["k"]))
	c.mu.Lock()
	o := c.objects[objectKey{kind: kindSecret, namespace: "ns", name: "s"}]
	c.mu.Unlock()
	select {
	case <-o.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch of an immutable secret did not stop")
	}
	s, err = c.Secret(ctx, "ns", "s")
	require.NoError(t, err, "still served from memory")
	assert.Equal(t, "v", string(s.Data["k"]))
}

func TestReferences(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		ImagePullSecrets: []v1.LocalObjectReference{{Name: "pull"}},
		Volumes: []v1.Volume{
			{VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "vol-s"}}},
			{VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "proj-cm"}}}}}}},
		},
		InitContainers: []v1.Container{{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "init-cm"}}}}}},
		Containers: []v1.Container{{Env: []v1.EnvVar{
			{Name: "A", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "env-s"}, Key: "k"}}},
			{Name: "B", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "proj-cm"}, Key: "k"}}},
		}}},
	}}
	cms, secrets := References(pod)
	assert.Equal(t, []string{"init-cm", "proj-cm"}, cms)
	assert.Equal(t, []string{"env-s", "pull", "vol-s"}, secrets)
}
