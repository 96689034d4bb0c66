package crisim

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestRuntimeInfo(t *testing.T) {
	e := newEnv(t, withConfig(func(cfg *Config) {
		cfg.RuntimeName = "simd"
		cfg.CgroupDriver = runtimeapi.CgroupDriver_CGROUPFS
	}))
	ctx := context.Background()

	v, err := e.rt.Version(ctx, "v1")
	require.NoError(t, err)
	require.Equal(t, "simd", v.RuntimeName)
	require.Equal(t, DefaultRuntimeVersion, v.RuntimeVersion)
	require.Equal(t, "v1", v.RuntimeApiVersion)

	rc, err := e.rt.RuntimeConfig(ctx)
	require.NoError(t, err)
	require.Equal(t, runtimeapi.CgroupDriver_CGROUPFS, rc.Linux.CgroupDriver)
	require.NoError(t, e.rt.UpdateRuntimeConfig(ctx, &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: "10.88.0.0/16"}}))
}

func TestRuntimeConditions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	conditions := func() map[string]*runtimeapi.RuntimeCondition {
		resp, err := e.rt.Status(ctx, false)
		require.NoError(t, err)
		out := map[string]*runtimeapi.RuntimeCondition{}
		for _, c := range resp.Status.Conditions {
			out[c.Type] = c
		}
		return out
	}

	conds := conditions()
	require.True(t, conds[runtimeapi.RuntimeReady].Status)
	require.True(t, conds[runtimeapi.NetworkReady].Status)

	e.sim.SetCondition(runtimeapi.NetworkReady, false, "NetworkPluginNotReady", "cni plugin not initialized")
	conds = conditions()
	require.True(t, conds[runtimeapi.RuntimeReady].Status)
	require.False(t, conds[runtimeapi.NetworkReady].Status)
	require.Equal(t, "NetworkPluginNotReady", conds[runtimeapi.NetworkReady].Reason)
	require.Equal(t, "cni plugin not initialized", conds[runtimeapi.NetworkReady].Message)

	e.sim.SetCondition(runtimeapi.RuntimeReady, false, "Crashed", "")
	require.False(t, conditions()[runtimeapi.RuntimeReady].Status)
}
