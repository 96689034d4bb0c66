package syncloop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

func manifest(name, image string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  containers: [{name: c, image: %q}]\n", name, image)
}

var mtime atomic.Int64

// writeFile writes a manifest with a fresh modification time, so that the
// stat check sees the change whatever the file system's granularity.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	ts := t0.Add(time.Duration(mtime.Add(1)) * time.Second)
	require.NoError(t, os.Chtimes(path, ts, ts))
}

func podNames(pods []*v1.Pod) string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name + "=" + p.Spec.Containers[0].Image
	}
	return strings.Join(names, ",")
}

func TestFileSourceScan(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	events := record.NewFakeRecorder(10)
	s, err := NewFileSource(FileSourceConfig{Path: dir, NodeName: "node-a", Recorder: events})
	require.NoError(t, err)

	step := func(name string, full bool, wantChanged bool, want string) {
		t.Helper()
		changed, err := s.Scan(ctx, full)
		require.NoError(t, err, name)
		require.Equal(t, wantChanged, changed, name)
		require.Equal(t, want, podNames(s.Pods()), name)
	}
	step("empty dir", true, false, "")

	writeFile(t, filepath.Join(dir, "a.yaml"), manifest("a", "img:1"))
	writeFile(t, filepath.Join(dir, "b.json"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"img:1"}]}}`)
	writeFile(t, filepath.Join(dir, ".hidden.yaml"), manifest("hidden", "img:1"))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	step("add", false, true, "a-node-a=img:1,b-node-a=img:1")
	step("nothing changed", false, false, "a-node-a=img:1,b-node-a=img:1")
	step("full re-read of unchanged files", true, false, "a-node-a=img:1,b-node-a=img:1")

	writeFile(t, filepath.Join(dir, "a.yaml"), manifest("a", "img:2"))
	step("modify", false, true, "a-node-a=img:2,b-node-a=img:1")

	uidBefore := s.Pods()[1].UID
	require.NoError(t, os.Rename(filepath.Join(dir, "b.json"), filepath.Join(dir, "b2.json")))
	step("rename keeps the pod", false, true, "a-node-a=img:2,b-node-a=img:1")
	require.Equal(t, uidBefore, s.Pods()[1].UID, "the UID does not depend on the file name")

	writeFile(t, filepath.Join(dir, "a.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers: [{name: c}]\n")
	step("invalid edit keeps the running version", false, false, "a-node-a=img:2,b-node-a=img:1")
	ev := <-events.Events
	require.Contains(t, ev, "Warning FailedValidation")
	require.Contains(t, ev, filepath.Join(dir, "a.yaml"))
	require.Contains(t, ev, "spec.containers[0].image: Required value")
	step("the same bad content is not reported again", true, false, "a-node-a=img:2,b-node-a=img:1")
	require.Empty(t, events.Events)

	writeFile(t, filepath.Join(dir, "c.yaml"), "not: [valid")
	step("an invalid new file adds nothing", false, false, "a-node-a=img:2,b-node-a=img:1")
	require.Contains(t, <-events.Events, "c.yaml")

	writeFile(t, filepath.Join(dir, "a.yaml"), manifest("a", "img:3"))
	step("fixing the file applies it", false, true, "a-node-a=img:3,b-node-a=img:1")

	require.NoError(t, os.Remove(filepath.Join(dir, "a.yaml")))
	step("delete", false, true, "b-node-a=img:1")

	require.NoError(t, os.RemoveAll(dir))
	changed, err := s.Scan(ctx, false)
	require.Error(t, err)
	require.True(t, changed, "a vanished directory means no static pods, like upstream")
	require.Empty(t, s.Pods())
}

func TestFileSourceSingleFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "only.yaml")
	writeFile(t, path, manifest("only", "img:1"))
	s, err := NewFileSource(FileSourceConfig{Path: path, NodeName: "n"})
	require.NoError(t, err)
	changed, err := s.Scan(context.Background(), true)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, "only-n=img:1", podNames(s.Pods()))
}

func TestFileSourceRunFeedsTheLoop(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), manifest("a", "img:1"))
	clk := clocktesting.NewFakeClock(t0)
	fs, err := NewFileSource(FileSourceConfig{Path: dir, NodeName: "node-a", Clock: clk})
	require.NoError(t, err)
	rec := &recorder{}
	l, err := New(Config{Handler: rec, Sources: []Source{fs}, Clock: clk, SyncPeriod: time.Hour, HousekeepingPeriod: time.Hour})
	require.NoError(t, err)
	stop := startLoop(t, l)
	expect := func(want ...string) {
		t.Helper()
		eventually(t, func() bool { return rec.len() >= len(want) }, fmt.Sprint(want))
		require.Equal(t, want, rec.take())
	}
	expect("ADD a-node-a")
	require.Eventually(t, l.SourcesReady, wait, time.Millisecond)

	// A changed manifest is a new static pod (new UID): REMOVE then ADD.
	writeFile(t, filepath.Join(dir, "a.yaml"), manifest("a", "img:2"))
	writeFile(t, filepath.Join(dir, "b.yaml"), manifest("b", "img:1"))
	eventually(t, func() bool { _, ok := fs.NextWake(); return ok }, "source parked")
	next, _ := fs.NextWake()
	require.True(t, t0.Add(DefaultFileCheckPeriod).Equal(next), "next scan %v", next)
	clk.Step(time.Second)
	expect("REMOVE a-node-a", "ADD a-node-a,b-node-a")
	eventually(t, func() bool { n, ok := fs.NextWake(); return ok && n.Equal(t0.Add(2*time.Second)) }, "parked for the next tick")
	stop(nil)
	_, ok := fs.NextWake()
	require.False(t, ok, "stopped")
}
