package volumes

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readLinked(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	return string(b)
}

func TestAtomicWriteLayoutAndSwap(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, atomicWrite(dir, map[string]File{
		"a":     {Data: []byte("one"), Mode: 0o644},
		"sub/b": {Data: []byte("two"), Mode: 0o400},
	}, t0, nil))

	ts, err := os.Readlink(filepath.Join(dir, "..data"))
	require.NoError(t, err)
	assert.Regexp(t, `^\.\.2026_01_02_03_04_05\.`, ts)
	link, err := os.Readlink(filepath.Join(dir, "a"))
	require.NoError(t, err)
	assert.Equal(t, "..data/a", link, "top-level names go through ..data")
	assert.Equal(t, "one", readLinked(t, dir, "a"))
	assert.Equal(t, "two", readLinked(t, dir, "sub/b"))
	info, err := os.Stat(filepath.Join(dir, "sub/b"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o400), info.Mode().Perm(), "the asked mode, whatever the umask")

	// An update swaps the whole set: a removed key disappears, the old
	// timestamped directory goes.
	require.NoError(t, atomicWrite(dir, map[string]File{"a": {Data: []byte("uno"), Mode: 0o644}}, t0.Add(time.Minute), nil))
	assert.Equal(t, "uno", readLinked(t, dir, "a"))
	_, err = os.Lstat(filepath.Join(dir, "sub"))
	assert.ErrorIs(t, err, os.ErrNotExist, "a name no longer in the payload is removed")
	_, err = os.Stat(filepath.Join(dir, ts))
	assert.ErrorIs(t, err, os.ErrNotExist, "the old timestamped directory is removed")
}

func TestAtomicWriteUnchangedPayloadKeepsDirectory(t *testing.T) {
	dir := t.TempDir()
	p := map[string]File{"k": {Data: []byte("v"), Mode: 0o644}}
	require.NoError(t, atomicWrite(dir, p, time.Unix(0, 0), nil))
	before, _ := os.Readlink(filepath.Join(dir, "..data"))
	calls := 0
	require.NoError(t, atomicWrite(dir, p, time.Unix(100, 0), func(string) error { calls++; return nil }))
	after, _ := os.Readlink(filepath.Join(dir, "..data"))
	assert.Equal(t, before, after, "equal content is not rewritten")
	assert.Zero(t, calls)

	// A mode change alone is a change.
	p["k"] = File{Data: []byte("v"), Mode: 0o600}
	require.NoError(t, atomicWrite(dir, p, time.Unix(200, 0), nil))
	after2, _ := os.Readlink(filepath.Join(dir, "..data"))
	assert.NotEqual(t, after, after2)
}

func TestAtomicWriteRejectsBadPaths(t *testing.T) {
	for _, p := range []string{"", "/abs", "..x", "a/../../b", "..data"} {
		err := atomicWrite(t.TempDir(), map[string]File{p: {Data: []byte("x"), Mode: 0o644}}, time.Unix(0, 0), nil)
		assert.Error(t, err, "path %q", p)
	}
}

func TestAtomicWriteFailedPermsLeavesOldContent(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, atomicWrite(dir, map[string]File{"k": {Data: []byte("old"), Mode: 0o644}}, time.Unix(0, 0), nil))
	err := atomicWrite(dir, map[string]File{"k": {Data: []byte("new"), Mode: 0o644}}, time.Unix(1, 0),
		func(string) error { return os.ErrPermission })
	require.Error(t, err)
	assert.Equal(t, "old", readLinked(t, dir, "k"), "a failed write never shows half a set")
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 3, "..data, one timestamped directory, k: %v", entries)
}
