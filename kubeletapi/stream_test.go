package kubeletapi_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/kubeletapi/kubeletapitest"
)

func TestStreamingEndpoints(t *testing.T) {
	tests := []struct {
		name   string
		method string
		path   string
		header []string
		code   int
		body   string
		want   *kubeletapitest.StreamCall // the Streamer call, if any (Pod not compared)
	}{
		{"exec", http.MethodPost, "/exec/ns/p/c?command=ls&command=-l&command=/tmp&output=1&error=1", nil, http.StatusOK, "ok",
			&kubeletapitest.StreamCall{Method: "Exec", Container: "c", Cmd: []string{"ls", "-l", "/tmp"}, Options: kubeletapi.StreamOptions{Stdout: true, Stderr: true}}},
		{"exec GET", http.MethodGet, "/exec/ns/p/c?command=sh&input=1&output=1&tty=1", nil, http.StatusOK, "ok",
			&kubeletapitest.StreamCall{Method: "Exec", Container: "c", Cmd: []string{"sh"}, Options: kubeletapi.StreamOptions{Stdin: true, Stdout: true, TTY: true}}},
		{"exec tty drops stderr", http.MethodPost, "/exec/ns/p/c?command=sh&output=1&error=1&tty=1", nil, http.StatusOK, "ok",
			&kubeletapitest.StreamCall{Method: "Exec", Container: "c", Cmd: []string{"sh"}, Options: kubeletapi.StreamOptions{Stdout: true, TTY: true}}},
		{"exec tty with stderr only", http.MethodPost, "/exec/ns/p/c?command=sh&error=1&tty=1", nil, http.StatusBadRequest, "you must specify at least 1 of stdin, stdout, stderr\n", nil},
		{"exec with uid", http.MethodPost, "/exec/ns/p/uid-1/c?command=true&output=1", nil, http.StatusOK, "ok",
			&kubeletapitest.StreamCall{Method: "Exec", Container: "c", Cmd: []string{"true"}, Options: kubeletapi.StreamOptions{Stdout: true}}},
		{"exec wrong uid", http.MethodPost, "/exec/ns/p/WRONGUID/c?command=true&output=1", nil, http.StatusNotFound, "pod not found\n", nil},
		{"exec unknown pod", http.MethodPost, "/exec/ns/x/c?command=true&output=1", nil, http.StatusNotFound, "pod does not exist\n", nil},
		{"exec no streams", http.MethodPost, "/exec/ns/p/c?command=true", nil, http.StatusBadRequest, "you must specify at least 1 of stdin, stdout, stderr\n", nil},
		{"exec PUT", http.MethodPut, "/exec/ns/p/c?command=true&output=1", nil, http.StatusMethodNotAllowed, "Method Not Allowed\n", nil},

		{"attach", http.MethodPost, "/attach/ns/p/c?output=1&input=1", nil, http.StatusOK, "ok",
			&kubeletapitest.StreamCall{Method: "Attach", Container: "c", Options: kubeletapi.StreamOptions{Stdin: true, Stdout: true}}},
		{"attach with uid", http.MethodGet, "/attach/ns/p/uid-1/c?error=1", nil, http.StatusOK, "ok",
			&kubeletapitest.StreamCall{Method: "Attach", Container: "c", Options: kubeletapi.StreamOptions{Stderr: true}}},
		{"attach wrong uid", http.MethodPost, "/attach/ns/p/WRONGUID/c?output=1", nil, http.StatusNotFound, "pod not found\n", nil},
		{"attach unknown pod", http.MethodPost, "/attach/ns/x/c?output=1", nil, http.StatusNotFound, "pod does not exist\n", nil},
		{"attach no streams", http.MethodPost, "/attach/ns/p/c", nil, http.StatusBadRequest, "you must specify at least 1 of stdin, stdout, stderr\n", nil},

		{"portForward", http.MethodPost, "/portForward/ns/p", nil, http.StatusOK, "ok",
			&kubeletapitest.StreamCall{Method: "PortForward"}},
		{"portForward with uid", http.MethodGet, "/portForward/ns/p/uid-1", nil, http.StatusOK, "ok",
			&kubeletapitest.StreamCall{Method: "PortForward"}},
		{"portForward websocket ports", http.MethodGet, "/portForward/ns/p?port=80,443&port=8080", []string{"Connection", "Upgrade", "Upgrade", "websocket"}, http.StatusOK, "ok",
			&kubeletapitest.StreamCall{Method: "PortForward", Ports: []int32{80, 443, 8080}}},
		{"portForward websocket without ports", http.MethodGet, "/portForward/ns/p", []string{"Connection", "Upgrade", "Upgrade", "websocket"}, http.StatusBadRequest, "query parameter \"port\" is required\n", nil},
		{"portForward websocket bad port", http.MethodGet, "/portForward/ns/p?port=http", []string{"Connection", "Upgrade", "Upgrade", "websocket"}, http.StatusBadRequest, "unable to parse \"http\" as a port: strconv.ParseUint: parsing \"http\": invalid syntax\n", nil},
		{"portForward wrong uid", http.MethodPost, "/portForward/ns/p/WRONGUID", nil, http.StatusNotFound, "pod not found\n", nil},
		{"portForward unknown pod", http.MethodPost, "/portForward/ns/x", nil, http.StatusNotFound, "pod does not exist\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, f := newServer(t, nil)
			w := do(srv.Handler(), tt.method, tt.path, tt.header...)
			require.Equal(t, tt.code, w.Code)
			require.Equal(t, tt.body, w.Body.String())
			calls := f.streamer.Calls()
			if tt.want == nil {
				require.Empty(t, calls)
				return
			}
			require.Len(t, calls, 1)
			got := calls[0]
			require.Equal(t, podUID, string(got.Pod.UID))
			got.Pod = nil
			require.Equal(t, *tt.want, got)
		})
	}
}

func TestStreamerErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code int
	}{
		{"status error", kubeletapi.NotFound("container not found (%q)", "c"), http.StatusNotFound},
		{"wrapped status error", errors.Join(errors.New("context"), &kubeletapi.StatusError{Code: http.StatusConflict, Err: errors.New("busy")}), http.StatusConflict},
		{"plain error", errors.New("runtime unavailable"), http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, f := newServer(t, nil)
			f.streamer.SetError(tt.err)
			for _, path := range []string{"/exec/ns/p/c?command=x&output=1", "/attach/ns/p/c?output=1", "/portForward/ns/p"} {
				w := do(srv.Handler(), http.MethodPost, path)
				require.Equal(t, tt.code, w.Code, path)
				require.Equal(t, tt.err.Error()+"\n", w.Body.String(), path)
			}
			require.Len(t, f.streamer.Calls(), 3)
		})
	}
}

func TestStatusError(t *testing.T) {
	inner := errors.New("gone")
	err := error(&kubeletapi.StatusError{Code: http.StatusGone, Err: inner})
	require.Equal(t, "gone", err.Error())
	require.ErrorIs(t, err, inner)
	var se *kubeletapi.StatusError
	require.ErrorAs(t, kubeletapi.NotFound("pod %q", "p"), &se)
	require.Equal(t, http.StatusNotFound, se.Code)
	require.Equal(t, `pod "p"`, se.Error())
}

func TestRun(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		out     []byte
		err     error
		code    int
		body    string
		wantCmd []string
	}{
		{"splits cmd on spaces", "/run/ns/p/c?cmd=echo+hello++world", []byte(`{"a":1}`), nil, http.StatusOK, `{"a":1}`, []string{"echo", "hello", "", "world"}},
		{"with uid", "/run/ns/p/uid-1/c?cmd=date", []byte("now"), nil, http.StatusOK, "now", []string{"date"}},
		{"no cmd", "/run/ns/p/c", nil, nil, http.StatusOK, "", []string{""}},
		{"wrong uid", "/run/ns/p/WRONGUID/c?cmd=date", nil, nil, http.StatusNotFound, "pod not found\n", nil},
		{"unknown pod", "/run/ns/x/c?cmd=date", nil, nil, http.StatusNotFound, "pod does not exist\n", nil},
		{"runner error", "/run/ns/p/c?cmd=false", []byte("ignored"), errors.New("exit status 1"), http.StatusInternalServerError, "exit status 1\n", []string{"false"}},
		{"runner status error", "/run/ns/p/c?cmd=date", nil, kubeletapi.NotFound("container not found (%q)", "c"), http.StatusNotFound, "container not found (\"c\")\n", []string{"date"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, f := newServer(t, nil)
			f.runner.SetOutput(tt.out, tt.err)
			w := do(srv.Handler(), http.MethodPost, tt.path)
			require.Equal(t, tt.code, w.Code)
			require.Equal(t, tt.body, w.Body.String())
			calls := f.runner.Calls()
			if tt.wantCmd == nil {
				require.Empty(t, calls)
				return
			}
			require.Len(t, calls, 1)
			require.Equal(t, kubeletapitest.RunCall{Pod: calls[0].Pod, Container: "c", Cmd: tt.wantCmd}, calls[0])
			require.Equal(t, podNS+"/"+podName, calls[0].Pod.String())
			if tt.code == http.StatusOK {
				require.Equal(t, "application/json", w.Header().Get("Content-Type"))
			}
		})
	}
}

func TestRunIsPostOnly(t *testing.T) {
	srv, f := newServer(t, nil)
	w := get(srv.Handler(), "/run/ns/p/c?cmd=date")
	require.Equal(t, http.StatusMethodNotAllowed, w.Code)
	require.Empty(t, f.runner.Calls())
}

func TestNotImplemented(t *testing.T) {
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.Logs, c.Streaming, c.Runner, c.Summary = nil, nil, nil, nil
	})
	h := srv.Handler()
	for _, tt := range []struct{ method, path, body string }{
		{http.MethodGet, "/containerLogs/ns/p/c", "container logs are not supported by this node\n"},
		{http.MethodPost, "/exec/ns/p/c?command=x&output=1", "exec is not supported by this node\n"},
		{http.MethodPost, "/attach/ns/p/c?output=1", "attach is not supported by this node\n"},
		{http.MethodPost, "/portForward/ns/p", "port forwarding is not supported by this node\n"},
		{http.MethodPost, "/run/ns/p/c?cmd=x", "run is not supported by this node\n"},
		{http.MethodGet, "/stats/summary", "stats are not supported by this node\n"},
		{http.MethodGet, "/metrics/resource", "stats are not supported by this node\n"},
		{http.MethodGet, "/metrics/cadvisor", "stats are not supported by this node\n"},
	} {
		w := do(h, tt.method, tt.path)
		require.Equal(t, http.StatusNotImplemented, w.Code, tt.path)
		require.Equal(t, tt.body, w.Body.String(), tt.path)
	}
	// Unconfigured gatherers and the endpoints upstream has but this
	// package does not serve are 404.
	for _, path := range []string{"/metrics", "/metrics/probes", "/configz", "/runningpods/", "/debug/pprof/", "/checkpoint/ns/p/c"} {
		require.Equal(t, http.StatusNotFound, get(h, path).Code, path)
	}
}
