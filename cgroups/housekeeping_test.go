package cgroups

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestCleanupDestroysOrphansOnly(t *testing.T) {
	ctx := context.Background()
	mnt := v1Tree(t)
	m, err := New(Config{Mount: mnt})
	require.NoError(t, err)
	require.NoError(t, m.Setup(ctx))
	keep := podWith("k1", ctr("a", rl("cpu", "500m"), nil))
	gone := podWith("g1", ctr("a", rl("cpu", "250m"), nil))
	for _, p := range []*v1.Pod{keep, gone} {
		require.NoError(t, m.EnsurePod(ctx, p))
	}
	c := Cleanup{Manager: m, Active: func() []*v1.Pod { return []*v1.Pod{keep} }}
	require.NoError(t, c.CleanupOrphans(ctx, func(uid types.UID) bool { return uid == keep.UID }))
	assert.True(t, m.PodExists(keep))
	assert.False(t, m.PodExists(gone))
	assert.Equal(t, "512", read(t, mnt+"/cpu", "kubepods", "burstable", "cpu.shares"), "QoS sized for the active pods")
}

type runtimeConfig struct {
	resp *runtimeapi.RuntimeConfigResponse
	err  error
}

func (r runtimeConfig) RuntimeConfig(context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	return r.resp, r.err
}

func TestRuntimeDriver(t *testing.T) {
	ctx := context.Background()
	linux := func(d runtimeapi.CgroupDriver) *runtimeapi.RuntimeConfigResponse {
		return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: d}}
	}
	d, err := RuntimeDriver(ctx, runtimeConfig{resp: linux(runtimeapi.CgroupDriver_SYSTEMD)})
	require.NoError(t, err)
	assert.Equal(t, DriverSystemd, d)
	d, err = RuntimeDriver(ctx, runtimeConfig{resp: linux(runtimeapi.CgroupDriver_CGROUPFS)})
	require.NoError(t, err)
	assert.Equal(t, DriverCgroupfs, d)
	_, err = RuntimeDriver(ctx, runtimeConfig{resp: &runtimeapi.RuntimeConfigResponse{}})
	assert.Error(t, err, "no Linux section: not reported")
	_, err = RuntimeDriver(ctx, runtimeConfig{err: errors.New("unimplemented")})
	assert.Error(t, err)
}
