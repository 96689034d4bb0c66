package volumes

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestLocalVolumeFSGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	ctx := context.Background()
	path := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(path, "f"), nil, 0o600))
	claim := boundClaim("c", "pv")
	e := newEnv(t, claim, pvFor("pv", claim, v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: path}}))
	pod := testPod(claimVolume("v", "c", false))
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To[int64](4321)}
	require.NoError(t, e.m.SetUpPod(ctx, pod))
	info, err := os.Stat(filepath.Join(path, "f"))
	require.NoError(t, err)
	assert.Equal(t, uint32(4321), statGID(t, info))
}
