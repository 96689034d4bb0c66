package agent

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nodekit/nodekit/syncloop"
	"github.com/nodekit/nodekit/volumes"
)

// FuzzStaticManifestDirectories runs any manifest file through the path a
// static pod takes to the disk: the file source (decoding, defaulting,
// validation), then the volume manager's setup and teardown of the pods it
// accepts. Whatever the manifest says, every directory created is under
// the root directory, and teardown leaves nothing of the pod behind.
func FuzzStaticManifestDirectories(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: c, image: i, volumeMounts: [{name: v, mountPath: /v, subPath: a/b}]}]\n  volumes: [{name: v, emptyDir: {}}]\n"))
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: \"../../../x\"}\nspec:\n  containers: [{name: c, image: i}]\n  volumes: [{name: \"../../../../../../escape-vol\", emptyDir: {}}]\n"))
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: \"..\"}\nspec:\n  containers: [{name: c, image: i}]\n  volumes: [{name: \"..\", emptyDir: {medium: Memory}}]\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j","uid":"a/b"},"spec":{"containers":[{"name":"c","image":"i"}],"volumes":[{"name":"d","downwardAPI":{"items":[{"path":"../../x","fieldRef":{"fieldPath":"metadata.name"}}]}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		base := t.TempDir()
		manifests, root := filepath.Join(base, "manifests"), filepath.Join(base, "root")
		require.NoError(t, os.Mkdir(manifests, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(manifests, "pod.yaml"), data, 0o644))
		src, err := syncloop.NewFileSource(syncloop.FileSourceConfig{Path: manifests, NodeName: "node-1"})
		require.NoError(t, err)
		ctx := context.Background()
		_, _ = src.Scan(ctx, true) // an invalid manifest is reported, not returned
		m, err := volumes.New(volumes.Config{RootDir: root, Mounter: volumes.DirOnly()})
		require.NoError(t, err)
		for _, pod := range src.Pods() {
			_ = m.SetUpPod(ctx, pod) // a volume type it does not set up fails loudly; fine here
			outsideOnly(t, base, manifests, root)
			require.NoError(t, m.TearDownPod(ctx, pod.UID))
			_, err := os.Stat(m.PodDir(pod.UID))
			require.ErrorIs(t, err, fs.ErrNotExist, "teardown removed the pod directory")
		}
		outsideOnly(t, base, manifests, root)
	})
}

// outsideOnly fails if base holds anything but the manifest directory and
// the root directory.
func outsideOnly(t *testing.T, base string, allowed ...string) {
	t.Helper()
	entries, err := os.ReadDir(base)
	require.NoError(t, err)
	for _, e := range entries {
		p := filepath.Join(base, e.Name())
		ok := false
		for _, a := range allowed {
			ok = ok || p == a
		}
		require.True(t, ok, "created outside the root directory: %s", p)
	}
	// And nothing at the filesystem root either (the reported escape).
	for _, name := range []string{"/escape-vol", "/x"} {
		_, err := os.Lstat(name)
		require.True(t, err != nil && strings.Contains(err.Error(), "no such file"), "%s exists", name)
	}
}
