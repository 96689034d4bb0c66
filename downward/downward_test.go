package downward

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDownwardFieldsAndResources(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1",
			Labels: map[string]string{"b": "2", "a": `q"uote`}, Annotations: map[string]string{"x": "y"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")},
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
		}}}},
	}
	for path, want := range map[string]string{
		"metadata.name": "p", "metadata.namespace": "ns", "metadata.uid": "u1",
		"metadata.labels": "a=\"q\\\"uote\"\nb=\"2\"", "metadata.annotations['x']": "y",
	} {
		got, err := PodField(pod, path)
		require.NoError(t, err, path)
		assert.Equal(t, want, got, path)
	}
	_, err := PodField(pod, "spec.nodeName")
	assert.Error(t, err)

	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("3"), v1.ResourceMemory: resource.MustParse("8Gi")}
	for _, tc := range []struct {
		res, divisor, want string
	}{
		{"limits.memory", "", "67108864"},
		{"limits.memory", "1Mi", "64"},
		{"limits.cpu", "", "3"}, // unset: node allocatable
		{"limits.cpu", "1m", "3000"},
		{"requests.cpu", "", "1"}, // 250m rounds up to whole CPUs
		{"requests.cpu", "1m", "250"},
		{"requests.memory", "", "0"},
	} {
		ref := &v1.ResourceFieldSelector{Resource: tc.res}
		if tc.divisor != "" {
			ref.Divisor = resource.MustParse(tc.divisor)
		}
		got, err := ContainerResource(ref, pod, "c", alloc)
		require.NoError(t, err, tc.res)
		assert.Equal(t, tc.want, got, "%s / %s", tc.res, tc.divisor)
	}
	_, err = ContainerResource(&v1.ResourceFieldSelector{Resource: "limits.cpu"}, pod, "nope", alloc)
	assert.ErrorContains(t, err, "container nope not found")
}
