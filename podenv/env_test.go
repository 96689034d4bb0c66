package podenv

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type fakeObjects struct {
	cms     map[string]*v1.ConfigMap
	secrets map[string]*v1.Secret
}

func (f fakeObjects) ConfigMap(_ context.Context, _, name string) (*v1.ConfigMap, error) {
	if cm, ok := f.cms[name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("configmap"), name)
}

func (f fakeObjects) Secret(_ context.Context, _, name string) (*v1.Secret, error) {
	if s, ok := f.secrets[name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("secret"), name)
}

func services() ([]*v1.Service, error) {
	return []*v1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"},
			Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Name: "https", Port: 443, Protocol: v1.ProtocolTCP}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "my-db", Namespace: "ns"},
			Spec: v1.ServiceSpec{ClusterIP: "10.96.0.9", Ports: []v1.ServicePort{{Port: 5432}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "headless", Namespace: "ns"}, Spec: v1.ServiceSpec{ClusterIP: v1.ClusterIPNone}},
		{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "other"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.7", Ports: []v1.ServicePort{{Port: 1}}}},
	}, nil
}

func base() Pod {
	return Pod{
		Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", Labels: map[string]string{"app": "a"}},
			Spec: v1.PodSpec{NodeName: "node-1", ServiceAccountName: "sa"}},
		HostIPs: []string{"192.0.2.2"}, PodIPs: []string{"10.1.0.5", "fd00::5"},
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")},
		Objects: fakeObjects{
			cms:     map[string]*v1.ConfigMap{"cm": {Data: map[string]string{"k": "from-cm", "other": "o"}}},
			secrets: map[string]*v1.Secret{"s": {Data: map[string][]byte{"pw": []byte("hunter2")}}},
		},
		Services: services, ServicesSynced: true,
	}
}

func TestBuild(t *testing.T) {
	p := base()
	c := &v1.Container{Name: "c",
		EnvFrom: []v1.EnvFromSource{{Prefix: "CM_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}},
		Env: []v1.EnvVar{
			{Name: "NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "GREETING", Value: "hi $(NAME) $(CM_k) $(MY_DB_SERVICE_HOST) $(UNSET) $$(NAME)"},
			{Name: "IPS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIPs"}}},
			{Name: "HOST", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
			{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "SA", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.serviceAccountName"}}},
			{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "PW", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "pw"}}},
			{Name: "KUBERNETES_SERVICE_HOST", Value: "overridden"},
		}}
	got, err := Build(context.Background(), p, c)
	require.NoError(t, err)
	for k, want := range map[string]string{
		"CM_k": "from-cm", "CM_other": "o", "NAME": "p",
		"GREETING": "hi p from-cm 10.96.0.9 $(UNSET) $(NAME)",
		"IPS":      "10.1.0.5,fd00::5", "HOST": "192.0.2.2", "NODE": "node-1", "SA": "sa", "MEM": "8192", "PW": "hunter2",
		"KUBERNETES_SERVICE_HOST":       "overridden", // the pod's own wins
		"KUBERNETES_SERVICE_PORT":       "443",
		"KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT":               "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_ADDR":  "10.96.0.1",
		"MY_DB_SERVICE_HOST":            "10.96.0.9",
		"MY_DB_PORT_5432_TCP_PROTO":     "tcp",
	} {
		assert.Equal(t, want, got[k], k)
	}
	assert.NotContains(t, got, "HEADLESS_SERVICE_HOST")
	assert.NotContains(t, got, "ELSEWHERE_SERVICE_HOST")

	off := false
	p.Pod.Spec.EnableServiceLinks = &off
	got, err = Build(context.Background(), p, &v1.Container{Name: "c"})
	require.NoError(t, err)
	assert.Equal(t, "10.96.0.1", got["KUBERNETES_SERVICE_HOST"], "always, even without service links")
	assert.NotContains(t, got, "MY_DB_SERVICE_HOST")
}

func TestBuildErrorsAndOptional(t *testing.T) {
	yes := true
	p := base()
	ref := func(name, key string, opt *bool) []v1.EnvVar {
		return []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: opt}}}}
	}
	_, err := Build(context.Background(), p, &v1.Container{Name: "c", Env: ref("absent", "k", nil)})
	assert.EqualError(t, err, `configmap "absent" not found`)
	_, err = Build(context.Background(), p, &v1.Container{Name: "c", Env: ref("cm", "nokey", nil)})
	assert.EqualError(t, err, "couldn't find key nokey in ConfigMap ns/cm")
	got, err := Build(context.Background(), p, &v1.Container{Name: "c", Env: ref("absent", "k", &yes)})
	require.NoError(t, err)
	assert.NotContains(t, got, "X", "an optional missing source leaves the variable unset")
	_, err = Build(context.Background(), p, &v1.Container{Name: "c", Env: []v1.EnvVar{{Name: "S", ValueFrom: &v1.EnvVarSource{
		SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "nope"}}}}})
	assert.EqualError(t, err, "couldn't find key nope in Secret ns/s")

	p.ServicesSynced = false
	_, err = Build(context.Background(), p, &v1.Container{Name: "c"})
	assert.EqualError(t, err, "services have not yet been read at least once, cannot construct envvars")
	p.Static = true
	_, err = Build(context.Background(), p, &v1.Container{Name: "c"})
	assert.NoError(t, err, "static pods do not wait for services")
}

func TestExpandAll(t *testing.T) {
	assert.Equal(t, []string{"echo", "x y", "$(Z)"}, ExpandAll([]string{"echo", "$(A) $(B)", "$(Z)"}, map[string]string{"A": "x", "B": "y"}))
	assert.Nil(t, ExpandAll(nil, nil))
}
