package kubeletapi

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestReloadingFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	write := func(name, content string) {
		t.Helper()
		tmp := name + ".tmp"
		require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
		require.NoError(t, os.Rename(tmp, name)) // a new file: seen whatever its time and size
	}
	write(a, "a1")
	write(b, "b1")
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	var loads [][]string
	load := func(contents [][]byte) error {
		if string(contents[0]) == "bad" {
			return errors.New("bad content")
		}
		loads = append(loads, []string{string(contents[0]), string(contents[1])})
		return nil
	}
	r, err := newReloadingFiles(clk, load, a, b)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"a1", "b1"}}, loads, "loaded once at construction")

	clk.SetTime(clk.Now().Add(2 * time.Second))
	require.NoError(t, r.check())
	require.Len(t, loads, 1, "unchanged files are not read again")

	write(b, "b2")
	require.NoError(t, r.check())
	require.Len(t, loads, 1, "not looked at again within a second")
	clk.SetTime(clk.Now().Add(time.Second))
	require.NoError(t, r.check())
	require.Equal(t, []string{"a1", "b2"}, loads[1], "either file's change reloads both")

	write(a, "bad")
	clk.SetTime(clk.Now().Add(time.Second))
	require.ErrorContains(t, r.check(), "bad content")
	require.Len(t, loads, 2, "content that does not load is not taken")
	clk.SetTime(clk.Now().Add(time.Second))
	require.Error(t, r.check(), "and is tried again at the next check")

	write(a, "a3")
	clk.SetTime(clk.Now().Add(time.Second))
	require.NoError(t, r.check())
	require.Equal(t, []string{"a3", "b2"}, loads[2])

	require.NoError(t, os.Remove(b))
	clk.SetTime(clk.Now().Add(time.Second))
	require.Error(t, r.check(), "a missing file fails the check")
	require.Len(t, loads, 3, "and keeps what was loaded")

	_, err = newReloadingFiles(clk, load, filepath.Join(dir, "missing"))
	require.Error(t, err)
}
