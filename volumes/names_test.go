package volumes

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A pod UID or volume name that is not one path component never makes the
// manager create or remove anything outside the pod's directory.
func TestUnsafeNamesTouchNothing(t *testing.T) {
	e := newEnv(t)
	outside := filepath.Join(filepath.Dir(e.m.cfg.RootDir), "victim")
	require.NoError(t, os.MkdirAll(filepath.Join(outside, "data"), 0o755))
	defer os.RemoveAll(outside)
	escape := "../../" + filepath.Base(outside)

	pod := testPod(v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	pod.UID = types.UID(escape)
	require.ErrorIs(t, e.m.SetUpPod(context.Background(), pod), ErrUnsafeName)
	require.ErrorIs(t, e.m.TearDownPod(context.Background(), pod.UID), ErrUnsafeName)

	pod = testPod(v1.Volume{Name: "../../../../" + filepath.Base(outside) + "/new", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	err := e.m.SetUpPod(context.Background(), pod)
	require.ErrorContains(t, err, "name cannot be a directory name")

	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing created next to the victim's data")
	require.DirExists(t, filepath.Join(outside, "data"), "and nothing removed")

	for _, name := range []string{"", ".", "..", "a/b", `a\b`, "a\x00"} {
		require.ErrorIs(t, checkName("volume", name), ErrUnsafeName, "%q", name)
	}
	require.NoError(t, checkName("pod UID", "0b1c6f0e-4b5e-4c9b-9e5e-2f1d3c4b5a69"))
}
