package crisim

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-client/pkg/logs"
)

// runPodLogs creates a READY sandbox named name whose log directory is dir.
func (e *env) runPodLogs(t *testing.T, name, dir string) string {
	t.Helper()
	cfg := podConfig(name)
	cfg.LogDirectory = dir
	id, err := e.rt.RunPodSandbox(context.Background(), cfg, "")
	require.NoError(t, err)
	return id
}

func TestContainerLogs(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.sim.ScriptLogs(Match{}, "generic")
	e.sim.ScriptLogs(Match{Container: "app"}, "hello", "two\nlines\n")
	e.sim.ScriptLogLines(Match{Container: "side"}, LogLine{Text: "out"}, LogLine{Text: "oops", Stderr: true})
	e.sim.ScriptLogs(Match{Container: "quiet"})

	dir := filepath.Join(t.TempDir(), "pods", "default_web") // created by the simulator
	podID := e.runPodLogs(t, "web", dir)
	e.clock.Step(time.Second)
	app := e.startContainer(t, podID, "app")
	side := e.startContainer(t, podID, "side")
	quiet := e.startContainer(t, podID, "quiet")

	st := e.containerStatus(t, app)
	require.Equal(t, filepath.Join(dir, "app", "1.log"), st.LogPath)
	const started = "2026-03-01T12:00:01.000000000Z"
	requireFile(t, st.LogPath,
		started+" stdout F hello\n"+
			started+" stdout F two\n"+
			started+" stdout F lines\n")
	requireFile(t, e.containerStatus(t, side).LogPath,
		started+" stdout F out\n"+
			started+" stderr F oops\n")
	requireFile(t, e.containerStatus(t, quiet).LogPath, "") // created empty

	e.clock.Step(1500 * time.Millisecond)
	require.NoError(t, e.sim.AppendLog(app, LogLine{Text: "later"}, LogLine{Text: "bad", Stderr: true}))
	requireFile(t, st.LogPath,
		started+" stdout F hello\n"+
			started+" stdout F two\n"+
			started+" stdout F lines\n"+
			"2026-03-01T12:00:02.500000000Z stdout F later\n"+
			"2026-03-01T12:00:02.500000000Z stderr F bad\n")

	// The kubelet's reader (behind kubectl logs) parses it.
	require.NoError(t, e.sim.ExitContainer(app, 0, ""))
	var stdout, stderr bytes.Buffer
	require.NoError(t, logs.ReadLogs(ctx, st.LogPath, app, &logs.LogOptions{Timestamp: true}, e.rt, &stdout, &stderr))
	require.Equal(t, "2026-03-01T12:00:01.000000000Z hello\n"+
		"2026-03-01T12:00:01.000000000Z two\n"+
		"2026-03-01T12:00:01.000000000Z lines\n"+
		"2026-03-01T12:00:02.500000000Z later\n", stdout.String())
	require.Equal(t, "2026-03-01T12:00:02.500000000Z bad\n", stderr.String())

	requireCode(t, codes.FailedPrecondition, e.sim.AppendLog(app, LogLine{Text: "too late"}))
	requireCode(t, codes.NotFound, e.sim.AppendLog("missing", LogLine{Text: "x"}))

	// A new attempt gets its own file; the previous one is left alone.
	cfg := containerConfig("app")
	cfg.Metadata.Attempt = 2
	cfg.LogPath = "app/2.log"
	next, err := e.rt.CreateContainer(ctx, podID, cfg, nil)
	require.NoError(t, err)
	require.NoError(t, e.rt.StartContainer(ctx, next))
	requireFile(t, filepath.Join(dir, "app", "2.log"),
		"2026-03-01T12:00:02.500000000Z stdout F hello\n"+
			"2026-03-01T12:00:02.500000000Z stdout F two\n"+
			"2026-03-01T12:00:02.500000000Z stdout F lines\n")
}

func TestContainerLogsUnwritable(t *testing.T) {
	e := newEnv(t)
	e.sim.ScriptLogs(Match{}, "hello")
	// A regular file where the directory should be: not even root can
	// create the log there.
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o644))
	podID := e.runPodLogs(t, "web", filepath.Join(blocker, "default_web"))
	id := e.startContainer(t, podID, "app")

	st := e.containerStatus(t, id)
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.State)
	require.Equal(t, filepath.Join(blocker, "default_web", "app", "1.log"), st.LogPath)
	require.NoError(t, e.sim.AppendLog(id, LogLine{Text: "more"}))
	require.NoFileExists(t, st.LogPath)
}

func TestContainerLogsWithoutLogDirectory(t *testing.T) {
	e := newEnv(t)
	e.sim.ScriptLogs(Match{}, "hello")
	podID := e.runPodLogs(t, "web", "")
	id := e.startContainer(t, podID, "app")

	st := e.containerStatus(t, id)
	require.Equal(t, "app/1.log", st.LogPath, "the container's LogPath as given")
	require.NoFileExists(t, "app/1.log", "relative paths are not written")
}

func requireFile(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, want, string(got))
}
