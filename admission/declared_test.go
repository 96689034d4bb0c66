package admission_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/admission"
)

func TestDeclaredFeatures(t *testing.T) {
	restartAll := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", RestartPolicyRules: []v1.ContainerRestartRule{{
		Action:    v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}}}}}
	plain := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}

	without, err := admission.DeclaredFeatures([]string{"ExtendWebSocketsToKubelet"}, "v1.36.3")
	require.NoError(t, err)
	res := without.Admit(context.Background(), admission.Attributes{Pod: restartAll})
	assert.False(t, res.Admit)
	assert.Equal(t, admission.ReasonPodFeatureUnsupported, res.Reason)
	assert.Equal(t, "Pod requires node features that are not available: RestartAllContainersOnContainerExits", res.Message)
	assert.True(t, without.Admit(context.Background(), admission.Attributes{Pod: plain}).Admit, "a pod that needs nothing")

	with, err := admission.DeclaredFeatures([]string{"RestartAllContainersOnContainerExits", "ExtendWebSocketsToKubelet"}, "v1.36.3")
	require.NoError(t, err)
	assert.True(t, with.Admit(context.Background(), admission.Attributes{Pod: restartAll}).Admit, "unsorted input is fine")

	_, err = admission.DeclaredFeatures([]string{"NoSuchFeature"}, "v1.36.3")
	assert.Error(t, err, "a feature outside the registry")
	_, err = admission.DeclaredFeatures(nil, "not-a-version")
	assert.Error(t, err)
}
