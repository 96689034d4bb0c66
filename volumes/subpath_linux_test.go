//go:build linux

package volumes

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// subPathVolume makes a volume and a directory outside it:
//
//	vol/real/             a directory
//	vol/file              a file
//	vol/alias -> real     links that stay inside
//	vol/real/up -> ../file
//	vol/abs -> <vol>/real
//	vol/evil -> <outside> links that leave
//	vol/climb -> ../outside
//	vol/real/deep -> ../../outside
//	vol/dangling -> missing
//	vol/loop -> loop
func subPathVolume(t *testing.T) (vol, outside string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	vol, outside = filepath.Join(base, "vol"), filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(vol, "real"), 0o755))
	require.NoError(t, os.Mkdir(outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(vol, "file"), []byte("in"), 0o644))
	for link, target := range map[string]string{
		"alias": "real", "real/up": "../file", "abs": filepath.Join(vol, "real"),
		"evil": outside, "climb": "../outside", "real/deep": "../../outside",
		"dangling": "missing", "loop": "loop",
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(vol, link)))
	}
	return vol, outside
}

func TestOpenSubPath(t *testing.T) {
	vol, outside := subPathVolume(t)
	for _, tc := range []struct {
		sub    string
		create bool
		want   string // the path opened, relative to vol; "" for an error
		dir    bool
		err    error
	}{
		{sub: "a/b/c", create: true, want: "a/b/c", dir: true},
		{sub: "a/b/c", want: "a/b/c", dir: true},
		{sub: "a/b/d", err: unix.ENOENT},
		{sub: "real", want: "real", dir: true},
		{sub: ".", want: ".", dir: true},
		{sub: "file", want: "file"},
		{sub: "alias", want: "real", dir: true},
		{sub: "alias/new/er", create: true, want: "real/new/er", dir: true},
		{sub: "real/up", want: "file"},
		{sub: "abs/x", create: true, want: "real/x", dir: true},
		{sub: "file/x", create: true, err: unix.ENOTDIR},
		{sub: "evil", err: errSubPathEscapes},
		{sub: "evil/x", create: true, err: errSubPathEscapes},
		{sub: "climb/x", create: true, err: errSubPathEscapes},
		{sub: "real/deep/x", create: true, err: errSubPathEscapes},
		{sub: "dangling/x", create: true, err: unix.ENOENT},
		{sub: "loop/x", create: true, err: unix.ELOOP},
	} {
		t.Run(tc.sub, func(t *testing.T) {
			f, err := openSubPath(vol, tc.sub, tc.create)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				assert.NotContains(t, err.Error(), vol, "no host path")
				assert.NotContains(t, err.Error(), outside, "no host path")
				return
			}
			require.NoError(t, err)
			defer f.close()
			assert.Equal(t, filepath.Join(vol, tc.want), f.path)
			assert.Equal(t, tc.dir, f.dir)
			assert.True(t, f.isAt(filepath.Join(vol, tc.want)), "the file descriptor holds what the path names")
		})
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing made outside")
	assert.NoDirExists(t, filepath.Join(vol, "missing"), "a link's missing target is not made")
}

func TestOpenSubPathSource(t *testing.T) {
	vol, _ := subPathVolume(t)
	f, err := openSubPath(vol, "alias/up", false)
	require.NoError(t, err)
	defer f.close()
	// Renaming the file away does not change what the descriptor names.
	require.NoError(t, os.Rename(filepath.Join(vol, "file"), filepath.Join(vol, "moved")))
	require.NoError(t, os.WriteFile(filepath.Join(vol, "file"), []byte("swapped"), 0o644))
	b, err := os.ReadFile(f.source())
	require.NoError(t, err)
	assert.Equal(t, "in", string(b))
}

func TestSubPathMountBindsWhatWasChecked(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root")
	}
	vol, _ := subPathVolume(t)
	m, err := New(Config{RootDir: t.TempDir(), Mounter: HostMounter()})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-bind"}}
	ctx := klog.NewContext(context.Background(), logr.Discard())
	t.Cleanup(func() { assert.NoError(t, m.TearDownPod(context.Background(), pod.UID)) })

	dir, err := m.subPathMount(ctx, pod, "v", vol, "alias/made", "c", 0)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "through-bind"), nil, 0o644))
	assert.FileExists(t, filepath.Join(vol, "real", "made", "through-bind"))
	again, err := m.subPathMount(ctx, pod, "v", vol, "alias/made", "c", 0)
	require.NoError(t, err)
	assert.Equal(t, dir, again, "already bound")

	file, err := m.subPathMount(ctx, pod, "v", vol, "real/up", "c", 1)
	require.NoError(t, err)
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "in", string(b), "a file subPath is bound on a file")

	_, err = m.subPathMount(ctx, pod, "v", vol, "evil/x", "c", 2)
	assert.EqualError(t, err, `failed to prepare subPath for volumeMount "v" of container "c"`)
}

func TestSubPathDirOnlyReturnsResolvedPath(t *testing.T) {
	vol, outside := subPathVolume(t)
	m, err := New(Config{RootDir: t.TempDir(), Mounter: DirOnly()})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-dir"}}
	ctx := klog.NewContext(context.Background(), logr.Discard())
	got, err := m.subPathMount(ctx, pod, "v", vol, "alias/x", "c", 0)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(vol, "real", "x"), got)
	assert.DirExists(t, got)
	_, err = m.subPathMount(ctx, pod, "v", vol, "climb/x", "c", 0)
	assert.EqualError(t, err, `failed to prepare subPath for volumeMount "v" of container "c"`)
	assert.NoDirExists(t, filepath.Join(outside, "x"))
}
