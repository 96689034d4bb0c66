package volumes

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestUsage(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"k": "v"}})
	pod := testPod(v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}},
		v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: t.TempDir()}}})
	assert.Nil(t, e.m.Usage(pod.UID), "not set up")
	require.NoError(t, e.setUp(ctx, pod))
	dir := filepath.Join(e.m.PodDir(pod.UID), "volumes", "kubernetes.io~empty-dir", "scratch")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data"), make([]byte, 1<<20), 0o644))

	byName := func() map[string]VolumeUsage {
		out := map[string]VolumeUsage{}
		for _, u := range e.m.Usage(pod.UID) {
			out[u.Name] = u
		}
		return out
	}
	u := byName()
	require.Len(t, u, 2, "hostPath is the node's, not the pod's")
	assert.GreaterOrEqual(t, u["scratch"].UsedBytes, uint64(1<<20))
	assert.Equal(t, uint64(2), u["scratch"].InodesUsed, "the directory and its file")
	assert.True(t, u["scratch"].LocalEphemeral)
	assert.True(t, u["cfg"].LocalEphemeral)
	assert.NotZero(t, u["cfg"].InodesUsed)

	// Served from the last walk for a period.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "more"), make([]byte, 1<<20), 0o644))
	assert.Equal(t, u["scratch"].UsedBytes, byName()["scratch"].UsedBytes)
	e.clock.Step(DefaultUsagePeriod)
	assert.GreaterOrEqual(t, byName()["scratch"].UsedBytes, uint64(2<<20))

	require.NoError(t, e.m.TearDownPod(ctx, pod.UID))
	assert.Nil(t, e.m.Usage(pod.UID))
	_, err := New(Config{RootDir: t.TempDir(), UsagePeriod: -time.Second})
	assert.ErrorIs(t, err, ErrInvalidConfig)
}
