package kubeletapi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/kubeletapi/kubeletapitest"
)

var (
	unitsCmd   = []string{"journalctl", "--field", "_SYSTEMD_UNIT"}
	entriesCmd = []string{"journalctl", "--utc"}
)

// logQueryServer serves the node log query over dir (a new temporary one
// if empty) with journalctl run by runner, on clk (may be nil).
func logQueryServer(t *testing.T, dir string, runner kubeletapi.CommandRunner, clk *clocktesting.FakeClock) (http.Handler, string) {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	srv, _ := newServer(t, func(cfg *kubeletapi.Config) {
		cfg.NodeLogDir, cfg.NodeLogQuery = dir, true
		cfg.Journal = &kubeletapi.Journalctl{Runner: runner}
		if clk != nil {
			cfg.Clock = clk
		}
	})
	return srv.Handler(), dir
}

func writeLog(t *testing.T, dir, name, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
}

// TestNodeLogQueryMalformed: upstream's newNodeLogQuery rows that fail, 400
// with the kubelet's field errors.
func TestNodeLogQueryMalformed(t *testing.T) {
	h, _ := logQueryServer(t, "", &kubeletapitest.CommandRunner{}, nil)
	for _, tc := range []struct{ query, msg string }{
		{"query=", `query: Invalid value: [""]: may not be empty`},
		{"query=%20%20&query=%20%20%20%20", `query: Invalid value: ["  ","    "]: may not be empty`},
		{"sinceTime=2019-12-04%2002:00:00", `sinceTime: Invalid value: "2019-12-04 02:00:00": invalid time format`},
		{"sinceTime=2019-12-04%2002", `sinceTime: Invalid value: "2019-12-04 02": invalid time format`},
		{"untilTime=2019-12-04%2002:00:00.000", `untilTime: Invalid value: "2019-12-04 02:00:00.000": invalid time format`},
		{"tailLines=foo", `tailLines: Invalid value: "foo": strconv.Atoi: parsing "foo": invalid syntax`},
		{"tailLines=%20", `tailLines: Invalid value: " ": strconv.Atoi: parsing " ": invalid syntax`},
		{"boot=foo", `boot: Invalid value: "foo": strconv.Atoi: parsing "foo": invalid syntax`},
		{"query=kubelet&boot=foo&tailLines=x", `[boot: Invalid value: "foo": strconv.Atoi: parsing "foo": invalid syntax, ` +
			`tailLines: Invalid value: "x": strconv.Atoi: parsing "x": invalid syntax]`},
	} {
		w := get(h, "/logs/?"+tc.query)
		require.Equal(t, http.StatusBadRequest, w.Code, tc.query)
		require.Equal(t, tc.msg+"\n", w.Body.String(), tc.query)
	}
}

// TestNodeLogQueryInvalid: upstream's validate rows that fail, 406 with the
// kubelet's field errors.
func TestNodeLogQueryInvalid(t *testing.T) {
	runner := &kubeletapitest.CommandRunner{}
	h, dir := logQueryServer(t, "", runner, nil)
	writeLog(t, dir, "test1.log", "one")
	for _, tc := range []struct{ query, msg string }{
		{"pattern=foo", `query: Required value: cannot be empty with options`},
		{"sinceTime=2023-01-04T02:00:00Z", `query: Required value: cannot be empty with options`},
		{"query=svc1&query=/test1.log", `query: Invalid value: "[/test1.log], [svc1]": cannot specify a file and service`},
		{"query=/test1.log&query=/test2.log", `query: Invalid value: ["/test1.log","/test2.log"]: cannot specify more than one file`},
		{"query=/test1.log&pattern=foo", `query: Invalid value: ["/test1.log"]: cannot specify file with options`},
		{"query=/nope.log", `query: Invalid value: ["/nope.log"]: statat nope.log: no such file or directory`},
		{"query=../etc/passwd", `query: Invalid value: ["../etc/passwd"]: statat ../etc/passwd: path escapes from parent`},
		{"query=svc1&pattern=foo%5C", `pattern: Invalid value: "foo\\": error parsing regexp: trailing backslash at end of expression: ` + "``"},
		{"query=svc1&sinceTime=2023-02-04T02:00:00Z&untilTime=2023-01-04T02:00:00Z",
			"untilTime: Invalid value: \"2023-01-04T02:00:00Z\": must be after `sinceTime`"},
		{"query=svc1&boot=1", `boot: Invalid value: 1: must be less than 1`},
		{"query=svc1&tailLines=100001", `tailLines: Invalid value: 100001: must be between 0 and 100000, inclusive`},
		{"query=svc1&tailLines=-1", `tailLines: Invalid value: -1: must be between 0 and 100000, inclusive`},
		{"query=svc%0A", `query: Invalid value: "svc\n": input contains unsupported characters`},
		{"query=" + strings.Repeat("svc1", 100), `query: Invalid value: "` + strings.Repeat("svc1", 100) + `": length must be less than 256`},
		{"query=a&query=b&query=c&query=d&query=e", `query: Too many: 5: must have at most 4 items`},
		{"query=svc1&boot=2&tailLines=100001", `[boot: Invalid value: 2: must be less than 1, ` +
			`tailLines: Invalid value: 100001: must be between 0 and 100000, inclusive]`},
	} {
		w := get(h, "/logs/?"+tc.query)
		require.Equal(t, http.StatusNotAcceptable, w.Code, tc.query)
		require.Equal(t, tc.msg+"\n", w.Body.String(), tc.query)
	}
	w := get(h, "/logs/test1.log?query=kubelet")
	require.Equal(t, http.StatusNotAcceptable, w.Code)
	require.Equal(t, "path not allowed in query mode\n", w.Body.String())
	require.Empty(t, runner.Calls(), "nothing runs for a refused query")
}

// TestNodeLogQueryJournal: a service the journal has is read with the
// kubelet's journalctl arguments; the answer is plain text.
func TestNodeLogQueryJournal(t *testing.T) {
	runner := &kubeletapitest.CommandRunner{}
	runner.Set(unitsCmd, "containerd.service\nkubelet.service\n", "", nil)
	runner.Set(entriesCmd, "Dec 04 02:00:01.000000 node kubelet[1]: started container\n", "", nil)
	h, _ := logQueryServer(t, "", runner, nil)

	w := get(h, "/logs/?query=kubelet&sinceTime=2019-12-04T02:00:00Z&untilTime=2019-12-05T13:04:05Z&tailLines=3&pattern=container&boot=-1")
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, "text/plain;charset=UTF-8", w.Header().Get("Content-Type"))
	require.Equal(t, "Dec 04 02:00:01.000000 node kubelet[1]: started container\n", w.Body.String())
	require.Equal(t, []kubeletapitest.CommandCall{
		{Name: "journalctl", Args: unitsCmd[1:]},
		{Name: "journalctl", Args: []string{"--utc", "--no-pager", "--output=short-precise",
			"--since=2019-12-4 02:0:0", "--until=2019-12-5 13:4:5", "--pager-end", "--lines=3",
			"--unit=kubelet", "--grep=container", "--boot", "-1"}},
	}, runner.Calls())

	// The largest tailLines is allowed; two services, one journalctl.
	w = get(h, "/logs/?query=kubelet&query=containerd&tailLines=100000")
	require.Equal(t, http.StatusOK, w.Code)
	calls := runner.Calls()
	require.Equal(t, []string{"--utc", "--no-pager", "--output=short-precise", "--pager-end", "--lines=100000",
		"--unit=kubelet", "--unit=containerd"}, calls[len(calls)-1].Args)

	// Gzip when the client asks for exactly that, as the kubelet.
	w = do(h, http.MethodGet, "/logs/?query=kubelet", "Accept-Encoding", "gzip")
	require.Equal(t, "gzip", w.Header().Get("Content-Encoding"))
	zr, err := gzip.NewReader(w.Body)
	require.NoError(t, err)
	text, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Equal(t, "Dec 04 02:00:01.000000 node kubelet[1]: started container\n", string(text))
}

// TestNodeLogQueryJournalErrors: journalctl's own failure is in its
// output; one that cannot run adds the kubelet's line, except for a
// previous boot.
func TestNodeLogQueryJournalErrors(t *testing.T) {
	j := &kubeletapitest.Journal{}
	srv, _ := newServer(t, func(cfg *kubeletapi.Config) {
		cfg.NodeLogDir, cfg.NodeLogQuery, cfg.Journal = t.TempDir(), true, j
	})
	h := srv.Handler()
	j.SetUnits([]string{"kubelet.service"}, nil)

	j.SetEntries("Failed to add filter for units: No data available\n", &kubeletapitest.ExitError{Code: 1})
	require.Equal(t, "Failed to add filter for units: No data available\n", get(h, "/logs/?query=kubelet").Body.String())

	j.SetEntries("", errors.New("fork/exec: resource temporarily unavailable"))
	require.Equal(t, "\nerror: journal output not available\n", get(h, "/logs/?query=kubelet").Body.String())
	require.Equal(t, "\nerror: journal output not available\n", get(h, "/logs/?query=kubelet&boot=0").Body.String())
	require.Empty(t, get(h, "/logs/?query=kubelet&boot=-1").Body.String())
	require.Equal(t, kubeletapitest.JournalCall{Services: []string{"kubelet"}, Options: kubeletapi.JournalOptions{Boot: ptr.To(-1)}},
		j.Calls()[len(j.Calls())-1])
}

// TestNodeLogQueryWithoutJournal: where journalctl cannot run, or does not
// know the unit, the service's log file is served, as the kubelet does.
func TestNodeLogQueryWithoutJournal(t *testing.T) {
	runner := &kubeletapitest.CommandRunner{} // no journalctl
	h, dir := logQueryServer(t, "", runner, nil)

	w := get(h, "/logs/?query=kubelet")
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, "\nlog not found for kubelet\n", w.Body.String())

	writeLog(t, dir, "kubelet.log", "I1204 kubelet started\n")
	require.Equal(t, "I1204 kubelet started\n", get(h, "/logs/?query=kubelet").Body.String())

	w = get(h, "/logs/?query=kubelet&tailLines=3")
	require.Equal(t, "\noptions present and query resolved to log files for [kubelet]\ntry without specifying options\n", w.Body.String())

	// A journal that has one service but not the other.
	runner.Set(unitsCmd, "containerd.service\n", "", nil)
	runner.Set(entriesCmd, "containerd entries\n", "", nil)
	require.Equal(t, "containerd entries\nI1204 kubelet started\n", get(h, "/logs/?query=containerd&query=kubelet").Body.String())
}

// TestNodeLogQueryServiceFiles: upstream's Test_heuristicsCopyFileLogs:
// <service>, <service>.log, then <service>/<service>.log, a directory
// skipped.
func TestNodeLogQueryServiceFiles(t *testing.T) {
	h, dir := logQueryServer(t, "", &kubeletapitest.CommandRunner{}, nil)
	require.Equal(t, "\nlog not found for service.log\n", get(h, "/logs/?query=service.log").Body.String())
	require.Equal(t, "\nlog not found for service\n", get(h, "/logs/?query=service").Body.String())

	writeLog(t, dir, "service.log", "valid logs")
	require.Equal(t, "valid logs", get(h, "/logs/?query=service.log").Body.String())
	require.Equal(t, "valid logs", get(h, "/logs/?query=service").Body.String())

	require.NoError(t, os.Mkdir(filepath.Join(dir, "service"), 0o755))
	require.Equal(t, "valid logs", get(h, "/logs/?query=service").Body.String(), "a directory is skipped")
	writeLog(t, dir, "service/service.log", "error")
	require.Equal(t, "valid logs", get(h, "/logs/?query=service").Body.String(), "the first match wins")

	writeLog(t, dir, "other/other.log", "nested")
	require.Equal(t, "nested", get(h, "/logs/?query=other").Body.String())

	// A link out of the directory is not followed.
	require.NoError(t, os.Symlink("/etc/hostname", filepath.Join(dir, "escape.log")))
	require.Contains(t, get(h, "/logs/?query=escape").Body.String(), "\nerror getting log for escape: ")
}

// TestNodeLogQueryFile: a file query is served from the log directory,
// with or without the leading slash the documentation shows.
func TestNodeLogQueryFile(t *testing.T) {
	h, dir := logQueryServer(t, "", &kubeletapitest.CommandRunner{}, nil)
	writeLog(t, dir, "app/app.log", "app line\n")
	for _, q := range []string{"/app/app.log", "app/app.log", "//app/app.log"} {
		w := get(h, "/logs/?query="+q)
		require.Equal(t, http.StatusOK, w.Code, q)
		require.Equal(t, "app line\n", w.Body.String(), q)
	}
	require.Contains(t, get(h, "/logs/?query=/").Body.String(), `<a href="app/">app/</a>`, "the directory itself")
	// Without a query, the directory as before.
	require.Equal(t, "app line\n", get(h, "/logs/app/app.log").Body.String())
	require.Contains(t, get(h, "/logs/?sinceTime=").Body.String(), `<a href="app/">app/</a>`, "empty options: no query")
	require.Contains(t, get(h, "/logs/?unknown=true").Body.String(), `<a href="app/">app/</a>`)
}

// TestNodeLogQueryDisabled: without NodeLogQuery, /logs/ serves the
// directory and ignores the query, as the kubelet without
// enableSystemLogQuery; NodeLogQuery needs NodeLogDir.
func TestNodeLogQueryDisabled(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, "kubelet.log", "x")
	srv, _ := newServer(t, func(cfg *kubeletapi.Config) { cfg.NodeLogDir = dir })
	w := get(srv.Handler(), "/logs/?query=kubelet")
	require.Equal(t, http.StatusOK, w.Code)
	require.Contains(t, w.Body.String(), `<a href="kubelet.log">kubelet.log</a>`)

	cfg, _ := baseConfig()
	cfg.NodeLogQuery = true
	_, err := kubeletapi.New(cfg)
	require.ErrorIs(t, err, kubeletapi.ErrInvalidConfig)
	require.ErrorContains(t, err, "NodeLogQuery needs NodeLogDir")

	cfg.NodeLogDir, cfg.NodeLogQueryTimeout = dir, -time.Second
	_, err = kubeletapi.New(cfg)
	require.ErrorContains(t, err, "NodeLogQueryTimeout -1s must not be negative")
}

// TestNodeLogQueryAuthorization: authorized as nodes/log.
func TestNodeLogQueryAuthorization(t *testing.T) {
	authz := &recordingAuthorizer{allow: map[string]bool{"log": true}}
	srv, _ := newServer(t, func(cfg *kubeletapi.Config) {
		cfg.NodeLogDir, cfg.NodeLogQuery = t.TempDir(), true
		cfg.Journal = &kubeletapitest.Journal{}
		cfg.Authenticator, cfg.Authorizer = headerAuthenticator{}, authz
	})
	w := do(srv.Handler(), http.MethodGet, "/logs/?query=kubelet", "Authorization", "Bearer admin")
	require.Equal(t, http.StatusOK, w.Code)
	attrs := authz.recorded()
	require.Len(t, attrs, 1)
	require.Equal(t, "log", attrs[0].GetSubresource())
	require.Equal(t, "get", attrs[0].GetVerb())
}

// TestNodeLogQueryTimeout: a journal that does not end is stopped after
// the timeout on the injected clock, what it wrote kept; and when the
// client goes away.
func TestNodeLogQueryTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	runner := &kubeletapitest.CommandRunner{}
	runner.Set(unitsCmd, "kubelet.service\n", "", nil)
	runner.Hang(entriesCmd, "first line\n")
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	h, _ := logQueryServer(t, "", runner, clk)

	w := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/logs/?query=kubelet", nil))
	}()
	require.Eventually(t, func() bool { return runner.Running() == 1 && clk.HasWaiters() }, 10*time.Second, time.Millisecond)
	clk.Step(kubeletapi.DefaultNodeLogQueryTimeout - time.Second)
	select {
	case <-done:
		t.Fatal("stopped before the timeout")
	case <-time.After(20 * time.Millisecond):
	}
	clk.Step(time.Second)
	<-done
	require.Equal(t, "first line\n", w.Body.String())

	ctx, cancel := context.WithCancel(context.Background())
	w = httptest.NewRecorder()
	done = make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/logs/?query=kubelet", nil).WithContext(ctx))
	}()
	require.Eventually(t, func() bool { return runner.Running() == 1 }, 10*time.Second, time.Millisecond)
	cancel()
	<-done
	require.Zero(t, runner.Running())
}

// TestJournalctl: the kubelet's journalctl arguments (upstream's
// Test_getLoggingCmd rows), units one a line, and errors wrapped.
func TestJournalctl(t *testing.T) {
	base := []string{"--utc", "--no-pager", "--output=short-precise"}
	require.Equal(t, base, kubeletapi.JournalctlArgs(nil, kubeletapi.JournalOptions{}))
	require.Equal(t, append(base, "--unit=p1", "--unit=p2"), kubeletapi.JournalctlArgs([]string{"p1", "p2"}, kubeletapi.JournalOptions{}))
	require.Equal(t, append(base, "--unit=p1", "--unit=p2"), kubeletapi.JournalctlArgs([]string{"p1", "", "p2"}, kubeletapi.JournalOptions{}))

	runner := &kubeletapitest.CommandRunner{}
	j := &kubeletapi.Journalctl{Path: "/usr/bin/journalctl", Runner: runner}
	_, err := j.Units(context.Background())
	require.ErrorContains(t, err, "journalctl --field _SYSTEMD_UNIT")
	require.ErrorContains(t, err, "executable file not found")

	runner.Set([]string{"/usr/bin/journalctl", "--field"}, "a.service\nb.service\n", "", nil)
	units, err := j.Units(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"a.service", "b.service"}, units)

	runner.Set([]string{"/usr/bin/journalctl", "--utc"}, "out\n", "err\n", &kubeletapitest.ExitError{Code: 1})
	var buf bytes.Buffer
	err = j.Copy(context.Background(), &buf, []string{"a"}, kubeletapi.JournalOptions{Pattern: "x"})
	var exit interface{ ExitCode() int }
	require.ErrorAs(t, err, &exit)
	require.Equal(t, "out\nerr\n", buf.String())
	require.Equal(t, append(append([]string{}, base...), "--unit=a", "--grep=x"), runner.Calls()[2].Args)
}

// TestExecRunner runs a real program: output, exit status, a missing
// program.
func TestExecRunner(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	var out bytes.Buffer
	r := kubeletapi.ExecRunner{}
	require.NoError(t, r.Run(context.Background(), "/bin/sh", []string{"-c", "echo hi; echo err >&2"}, &out, &out))
	require.Equal(t, "hi\nerr\n", out.String())
	err := r.Run(context.Background(), "/bin/sh", []string{"-c", "exit 3"}, io.Discard, io.Discard)
	var exit interface{ ExitCode() int }
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 3, exit.ExitCode())
	err = r.Run(context.Background(), "/nonexistent/journalctl", nil, io.Discard, io.Discard)
	require.Error(t, err)
	require.False(t, errors.As(err, &exit))
}
