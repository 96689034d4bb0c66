package kubetypes_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/kubetypes"
)

func withAnnotations(kv ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Annotations: map[string]string{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		p.Annotations[kv[i]] = kv[i+1]
	}
	return p
}

func TestPredicates(t *testing.T) {
	for _, tc := range []struct {
		name           string
		pod            *v1.Pod
		static, mirror bool
	}{
		{"api", withAnnotations(kubetypes.ConfigSourceAnnotationKey, kubetypes.APIServerSource), false, false},
		{"file", withAnnotations(kubetypes.ConfigSourceAnnotationKey, kubetypes.FileSource), true, false},
		{"http", withAnnotations(kubetypes.ConfigSourceAnnotationKey, kubetypes.HTTPSource), true, false},
		{"no source", withAnnotations(), false, false},
		{"mirror", withAnnotations(kubetypes.ConfigMirrorAnnotationKey, "h"), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.static, kubetypes.IsStatic(tc.pod))
			require.Equal(t, tc.mirror, kubetypes.IsMirror(tc.pod))
		})
	}
	static := withAnnotations(kubetypes.ConfigSourceAnnotationKey, kubetypes.FileSource, kubetypes.ConfigHashAnnotationKey, "h1")
	require.True(t, kubetypes.IsMirrorOf(withAnnotations(kubetypes.ConfigMirrorAnnotationKey, "h1"), static))
	require.False(t, kubetypes.IsMirrorOf(withAnnotations(kubetypes.ConfigMirrorAnnotationKey, "h2"), static))
	require.False(t, kubetypes.IsMirrorOf(withAnnotations(), static))
	other := withAnnotations(kubetypes.ConfigMirrorAnnotationKey, "h1")
	other.Name = "other"
	require.False(t, kubetypes.IsMirrorOf(other, static), "another pod's name")

	require.True(t, kubetypes.IsSidecar(&v1.Container{RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}))
	require.False(t, kubetypes.IsSidecar(&v1.Container{}))
	require.Equal(t, "web_ns", kubetypes.FullName(static))
}
