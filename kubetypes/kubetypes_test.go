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

func TestContainerShouldRestart(t *testing.T) {
	in := func(codes ...int32) *v1.ContainerRestartRuleOnExitCodes {
		return &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: codes}
	}
	rule := func(action v1.ContainerRestartRuleAction, codes *v1.ContainerRestartRuleOnExitCodes) v1.ContainerRestartRule {
		return v1.ContainerRestartRule{Action: action, ExitCodes: codes}
	}
	never := ptr.To(v1.ContainerRestartPolicyNever)
	for _, tc := range []struct {
		name string
		c    v1.Container
		pod  v1.RestartPolicy
		code int32
		want bool
	}{
		{"pod Always", v1.Container{}, v1.RestartPolicyAlways, 0, true},
		{"pod OnFailure, success", v1.Container{}, v1.RestartPolicyOnFailure, 0, false},
		{"pod OnFailure, failure", v1.Container{}, v1.RestartPolicyOnFailure, 1, true},
		{"pod Never", v1.Container{}, v1.RestartPolicyNever, 1, false},
		{"container Never beats pod Always", v1.Container{RestartPolicy: never}, v1.RestartPolicyAlways, 1, false},
		{"container Always beats pod Never", v1.Container{RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}, v1.RestartPolicyNever, 0, true},
		{"container OnFailure", v1.Container{RestartPolicy: ptr.To(v1.ContainerRestartPolicyOnFailure)}, v1.RestartPolicyNever, 3, true},
		{"matching Restart rule", v1.Container{RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleActionRestart, in(42))}}, v1.RestartPolicyNever, 42, true},
		{"rule not matching", v1.Container{RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleActionRestart, in(42))}}, v1.RestartPolicyNever, 1, false},
		{"NotIn rule", v1.Container{RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleActionRestart,
			&v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpNotIn, Values: []int32{0}})}}, v1.RestartPolicyNever, 7, true},
		{"rules ignored without a container policy", v1.Container{RestartPolicyRules: []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleActionRestart, in(42))}}, v1.RestartPolicyNever, 42, false},
		{"RestartAllContainers restarts", v1.Container{RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleActionRestartAllContainers, in(9))}}, v1.RestartPolicyNever, 9, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, kubetypes.ContainerShouldRestart(&tc.c, &v1.PodSpec{RestartPolicy: tc.pod}, tc.code))
		})
	}
	all := v1.Container{RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleActionRestartAllContainers, in(9))}}
	require.True(t, kubetypes.RestartsAllContainers(&all, 9))
	require.False(t, kubetypes.RestartsAllContainers(&all, 8))
	require.True(t, kubetypes.MayRestartAllContainers(&v1.PodSpec{InitContainers: []v1.Container{all}}))
	require.True(t, kubetypes.MayRestartAllContainers(&v1.PodSpec{Containers: []v1.Container{{}, all}}))
	restart := v1.Container{RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleActionRestart, in(9))}}
	require.False(t, kubetypes.MayRestartAllContainers(&v1.PodSpec{Containers: []v1.Container{restart}}))
}
