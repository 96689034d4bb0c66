package nodestatus_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"

	"github.com/nodekit/nodekit/nodestatus"
)

func TestDiscoverDeclaredFeatures(t *testing.T) {
	kubelet := []string{"RestartAllContainersOnContainerExits", "InPlacePodLevelResourcesVerticalScaling",
		"ExtendWebSocketsToKubelet", "InPlacePodVerticalScalingInitContainers"}
	got, err := nodestatus.DiscoverDeclaredFeatures(kubelet, ndf.RuntimeFeatures{}, "")
	require.NoError(t, err)
	require.Equal(t, []string{"ExtendWebSocketsToKubelet", "InPlacePodLevelResourcesVerticalScaling",
		"InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"}, got,
		"what the v1.36 kubelet declares with its default gates")

	got, err = nodestatus.DiscoverDeclaredFeatures([]string{"UserNamespacesHostNetworkSupport"}, ndf.RuntimeFeatures{}, "v1.36.3")
	require.NoError(t, err)
	require.Empty(t, got, "the gate alone is not enough: the runtime must support it")
	got, err = nodestatus.DiscoverDeclaredFeatures([]string{"UserNamespacesHostNetworkSupport"},
		ndf.RuntimeFeatures{UserNamespacesHostNetwork: true}, "v1.36.3")
	require.NoError(t, err)
	require.Equal(t, []string{"UserNamespacesHostNetworkSupport"}, got)

	got, err = nodestatus.DiscoverDeclaredFeatures([]string{"NoSuchGate"}, ndf.RuntimeFeatures{}, "v1.36.3")
	require.NoError(t, err)
	require.Empty(t, got, "a gate outside the registry declares nothing")

	_, err = nodestatus.DiscoverDeclaredFeatures(nil, ndf.RuntimeFeatures{}, "one.two")
	require.True(t, errors.Is(err, nodestatus.ErrInvalidConfig), err)
}

func TestDeclaredFeaturesSetter(t *testing.T) {
	in := []string{"ExtendWebSocketsToKubelet"}
	set := nodestatus.DeclaredFeatures(in)
	in[0] = "changed"
	node := &v1.Node{}
	require.NoError(t, set(context.Background(), time.Now(), node))
	require.Equal(t, []string{"ExtendWebSocketsToKubelet"}, node.Status.DeclaredFeatures, "the setter keeps its own copy")

	node = &v1.Node{}
	require.NoError(t, nodestatus.DeclaredFeatures(nil)(context.Background(), time.Now(), node))
	require.Nil(t, node.Status.DeclaredFeatures)
}

// A node declares the registry's features its agent implements; the API
// server and the scheduler send it only pods whose needs it declares.
func ExampleDiscoverDeclaredFeatures() {
	features, err := nodestatus.DiscoverDeclaredFeatures(
		[]string{"RestartAllContainersOnContainerExits", "ExtendWebSocketsToKubelet"}, ndf.RuntimeFeatures{}, "v1.36.3")
	if err != nil {
		panic(err)
	}
	node := &v1.Node{}
	_ = nodestatus.DeclaredFeatures(features)(context.Background(), time.Now(), node)
	fmt.Println(node.Status.DeclaredFeatures)
	// Output: [ExtendWebSocketsToKubelet RestartAllContainersOnContainerExits]
}
