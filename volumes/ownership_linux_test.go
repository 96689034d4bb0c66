package volumes

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// fsGroupChangePolicy OnRootMismatch skips the walk when the volume's root
// already has the group and the permissions; Always (the default) walks.
func TestSetOwnershipChangePolicy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group to another group needs root")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	pod := &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{FSGroup: ptr.To[int64](1234)}}}
	require.NoError(t, SetOwnership(pod, dir, false))
	info, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, uint32(1234), statGID(t, info))

	// A file whose group changed inside a volume whose root matches.
	require.NoError(t, os.Chown(file, -1, 0))
	pod.Spec.SecurityContext.FSGroupChangePolicy = ptr.To(v1.FSGroupChangeOnRootMismatch)
	require.NoError(t, SetOwnership(pod, dir, false))
	info, _ = os.Stat(file)
	require.Equal(t, uint32(0), statGID(t, info), "OnRootMismatch: the root matched, nothing walked")

	// Another fsGroup: the root mismatches, everything changes.
	pod.Spec.SecurityContext.FSGroup = ptr.To[int64](4321)
	require.NoError(t, SetOwnership(pod, dir, false))
	info, _ = os.Stat(file)
	require.Equal(t, uint32(4321), statGID(t, info))

	pod.Spec.SecurityContext.FSGroupChangePolicy = ptr.To(v1.FSGroupChangeAlways)
	require.NoError(t, os.Chown(file, -1, 0))
	require.NoError(t, SetOwnership(pod, dir, false))
	info, _ = os.Stat(file)
	require.Equal(t, uint32(4321), statGID(t, info), "Always walks")

	require.NoError(t, SetOwnership(&v1.Pod{}, dir, false), "no fsGroup: nothing to do")
}
