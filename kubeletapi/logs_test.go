package kubeletapi_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/kubeletapi/kubeletapitest"
)

func TestParseLogOptions(t *testing.T) {
	since := metav1.NewTime(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC))
	tests := []struct {
		query   string
		want    *v1.PodLogOptions
		wantErr string
	}{
		{"", &v1.PodLogOptions{}, ""},
		{"follow=true&previous=1&timestamps=false", &v1.PodLogOptions{Follow: true, Previous: true}, ""},
		{"follow", &v1.PodLogOptions{Follow: true}, ""},
		{"tailLines=5&limitBytes=10&sinceSeconds=30", &v1.PodLogOptions{TailLines: ptr.To[int64](5), LimitBytes: ptr.To[int64](10), SinceSeconds: ptr.To[int64](30)}, ""},
		{"sinceTime=2024-05-06T07:08:09Z", &v1.PodLogOptions{SinceTime: &since}, ""},
		{"stream=Stdout&container=x&insecureSkipTLSVerifyBackend=true", &v1.PodLogOptions{Stream: ptr.To("Stdout"), Container: "x", InsecureSkipTLSVerifyBackend: true}, ""},
		{"tail=all&tailLines=3", &v1.PodLogOptions{}, ""},
		{"tail=5", &v1.PodLogOptions{TailLines: ptr.To[int64](5)}, ""},
		{"tail=5&tailLines=3", &v1.PodLogOptions{TailLines: ptr.To[int64](5)}, ""},
		{"unknown=1", &v1.PodLogOptions{}, ""},
		{"follow=notabool", nil, "follow"},
		{"tailLines=abc", nil, "tailLines"},
		{"tail=abc", nil, "tailLines"},
		{"limitBytes=1.5", nil, "limitBytes"},
		{"sinceTime=yesterday", nil, "sinceTime"},
		{"stream=" + strings.Repeat("x", 257), nil, "stream: value too long"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			require.NoError(t, err)
			before := q.Encode()
			got, err := kubeletapi.ParseLogOptions(q)
			require.Equal(t, before, q.Encode(), "the query is not changed")
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestValidateLogOptions(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name    string
		opts    v1.PodLogOptions
		wantErr string
	}{
		{"empty", v1.PodLogOptions{}, ""},
		{"tail 0", v1.PodLogOptions{TailLines: ptr.To[int64](0)}, ""},
		{"negative tail", v1.PodLogOptions{TailLines: ptr.To[int64](-1)}, "tailLines"},
		{"limit 0", v1.PodLogOptions{LimitBytes: ptr.To[int64](0)}, "limitBytes"},
		{"since 0", v1.PodLogOptions{SinceSeconds: ptr.To[int64](0)}, "sinceSeconds"},
		{"since both", v1.PodLogOptions{SinceSeconds: ptr.To[int64](5), SinceTime: &now}, "at most one"},
		{"stream All with tail", v1.PodLogOptions{Stream: ptr.To(v1.LogStreamAll), TailLines: ptr.To[int64](1)}, ""},
		{"stream Stderr", v1.PodLogOptions{Stream: ptr.To(v1.LogStreamStderr)}, ""},
		{"bad stream", v1.PodLogOptions{Stream: ptr.To("Both")}, "unsupported value"},
		{"stream Stdout with tail", v1.PodLogOptions{Stream: ptr.To(v1.LogStreamStdout), TailLines: ptr.To[int64](1)}, "mutually exclusive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := kubeletapi.ValidateLogOptions(&tt.opts)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// logServer serves ns/p with container c logging "out1", "err1", "out2"
// and "err2" alternately on stdout and stderr.
func logServer(t *testing.T) (http.Handler, *fakes) {
	t.Helper()
	srv, f := newServer(t, nil)
	f.logs.SetLines(podNS, podName, "c",
		kubeletapitest.Line{Text: "out1"}, kubeletapitest.Line{Text: "err1", Stderr: true},
		kubeletapitest.Line{Text: "out2"}, kubeletapitest.Line{Text: "err2", Stderr: true})
	return srv.Handler(), f
}

func TestContainerLogs(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		code     int
		body     string
		wantOpts *v1.PodLogOptions // of the LogSource call, if any
	}{
		{"all", "/containerLogs/ns/p/c", http.StatusOK, "out1\nerr1\nout2\nerr2\n", &v1.PodLogOptions{}},
		{"tailLines", "/containerLogs/ns/p/c?tailLines=1", http.StatusOK, "err2\n", &v1.PodLogOptions{TailLines: ptr.To[int64](1)}},
		{"legacy tail", "/containerLogs/ns/p/c?tail=2", http.StatusOK, "out2\nerr2\n", &v1.PodLogOptions{TailLines: ptr.To[int64](2)}},
		{"legacy tail=all", "/containerLogs/ns/p/c?tail=all&tailLines=1", http.StatusOK, "out1\nerr1\nout2\nerr2\n", &v1.PodLogOptions{}},
		{"limitBytes", "/containerLogs/ns/p/c?limitBytes=7", http.StatusOK, "out1\ner", &v1.PodLogOptions{LimitBytes: ptr.To[int64](7)}},
		{"stdout only", "/containerLogs/ns/p/c?stream=Stdout", http.StatusOK, "out1\nout2\n", &v1.PodLogOptions{Stream: ptr.To(v1.LogStreamStdout)}},
		{"stderr only", "/containerLogs/ns/p/c?stream=Stderr", http.StatusOK, "err1\nerr2\n", &v1.PodLogOptions{Stream: ptr.To(v1.LogStreamStderr)}},
		{"both streams", "/containerLogs/ns/p/c?stream=All", http.StatusOK, "out1\nerr1\nout2\nerr2\n", &v1.PodLogOptions{Stream: ptr.To(v1.LogStreamAll)}},
		{"previous", "/containerLogs/ns/p/c?previous=true", http.StatusOK, "out1\nerr1\nout2\nerr2\n", &v1.PodLogOptions{Previous: true}},

		{"unknown pod", "/containerLogs/ns/x/c", http.StatusNotFound, "pod \"x\" does not exist\n", nil},
		{"unknown namespace", "/containerLogs/other/p/c", http.StatusNotFound, "pod \"p\" does not exist\n", nil},
		{"unknown container", "/containerLogs/ns/p/nope", http.StatusNotFound, "container \"nope\" not found in pod \"p\"\n", nil},

		{"malformed follow", "/containerLogs/ns/p/c?follow=notabool", http.StatusBadRequest, "{\"message\": \"Unable to decode query.\"}\n", nil},
		{"malformed tailLines", "/containerLogs/ns/p/c?tailLines=abc", http.StatusBadRequest, "{\"message\": \"Unable to decode query.\"}\n", nil},
		{"malformed tail", "/containerLogs/ns/p/c?tail=abc", http.StatusBadRequest, "{\"message\": \"Unable to decode query.\"}\n", nil},
		{"value too long", "/containerLogs/ns/p/c?stream=" + strings.Repeat("x", 300), http.StatusBadRequest, "{\"message\": \"Unable to decode query.\"}\n", nil},
		{"malformed before unknown pod", "/containerLogs/ns/x/c?follow=notabool", http.StatusBadRequest, "{\"message\": \"Unable to decode query.\"}\n", nil},

		{"negative tailLines", "/containerLogs/ns/p/c?tailLines=-1", http.StatusUnprocessableEntity, "{\"message\": \"Invalid request.\"}\n", nil},
		{"legacy negative tail", "/containerLogs/ns/p/c?tail=-1", http.StatusUnprocessableEntity, "{\"message\": \"Invalid request.\"}\n", nil},
		{"limitBytes 0", "/containerLogs/ns/p/c?limitBytes=0", http.StatusUnprocessableEntity, "{\"message\": \"Invalid request.\"}\n", nil},
		{"sinceSeconds and sinceTime", "/containerLogs/ns/p/c?sinceSeconds=5&sinceTime=2024-05-06T07:08:09Z", http.StatusUnprocessableEntity, "{\"message\": \"Invalid request.\"}\n", nil},
		{"bad stream", "/containerLogs/ns/p/c?stream=Both", http.StatusUnprocessableEntity, "{\"message\": \"Invalid request.\"}\n", nil},
		{"stream with tail", "/containerLogs/ns/p/c?stream=Stdout&tailLines=1", http.StatusUnprocessableEntity, "{\"message\": \"Invalid request.\"}\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, f := logServer(t)
			w := get(h, tt.path)
			require.Equal(t, tt.code, w.Code)
			require.Equal(t, tt.body, w.Body.String())
			calls := f.logs.Calls()
			if tt.wantOpts == nil {
				require.Empty(t, calls)
				return
			}
			require.Len(t, calls, 1)
			require.Equal(t, *tt.wantOpts, calls[0].Options)
			require.Equal(t, "c", calls[0].Container)
			require.Equal(t, podNS+"/"+podName, calls[0].Pod.String())
			stream := ptr.Deref(tt.wantOpts.Stream, v1.LogStreamAll)
			require.Equal(t, stream != v1.LogStreamStderr, calls[0].Stdout)
			require.Equal(t, stream != v1.LogStreamStdout, calls[0].Stderr)
			require.Equal(t, "text/plain", w.Header().Get("Content-Type"))
		})
	}
}

func TestContainerLogsOtherContainers(t *testing.T) {
	h, f := logServer(t)
	for _, c := range []string{"c2", "init", "debug"} {
		f.logs.SetLines(podNS, podName, c, kubeletapitest.Stdout("from "+c)...)
		w := get(h, "/containerLogs/ns/p/"+c)
		require.Equal(t, http.StatusOK, w.Code)
		require.Equal(t, "from "+c+"\n", w.Body.String())
	}
}

func TestContainerLogsSourceError(t *testing.T) {
	h, f := logServer(t)
	f.logs.SetError(podNS, podName, "c", errors.New(`container "c" in pod "p" is waiting to start: ContainerCreating`))
	w := get(h, "/containerLogs/ns/p/c")
	require.Equal(t, http.StatusBadRequest, w.Code)
	require.Equal(t, "container \"c\" in pod \"p\" is waiting to start: ContainerCreating\n", w.Body.String())

	// A container in the spec without a log.
	w = get(h, "/containerLogs/ns/p/c2")
	require.Equal(t, http.StatusBadRequest, w.Code)
	require.Equal(t, "container \"c2\" in pod \"p\" is not available\n", w.Body.String())
}

// failingLogSource writes "partial" and then fails.
type failingLogSource struct{}

func (failingLogSource) ContainerLogs(_ context.Context, _ *v1.Pod, _ string, _ *v1.PodLogOptions, stdout, _ io.Writer) error {
	_, _ = io.WriteString(stdout, "partial\n")
	return errors.New("log file rotated away")
}

func TestContainerLogsErrorAfterWrite(t *testing.T) {
	srv, _ := newServer(t, func(c *kubeletapi.Config) { c.Logs = failingLogSource{} })
	w := get(srv.Handler(), "/containerLogs/ns/p/c")
	require.Equal(t, http.StatusOK, w.Code, "the status line is already sent")
	require.Equal(t, "partial\n", w.Body.String(), "the stream is truncated, with no error text appended")
}

func TestContainerLogsFollow(t *testing.T) {
	defer goleak.VerifyNone(t)
	h, f := logServer(t)
	ts := httptest.NewServer(h)
	defer ts.Close()
	client := ts.Client()
	defer client.CloseIdleConnections()

	resp, err := client.Get(ts.URL + "/containerLogs/ns/p/c?follow=true&tailLines=1")
	require.NoError(t, err, "the headers arrive before the follow blocks")
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "err2\n", line)

	f.logs.Append(podNS, podName, "c", kubeletapitest.Stdout("out3")...)
	line, err = r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "out3\n", line, "appended lines are flushed as they come")

	f.logs.Append(podNS, podName, "c", kubeletapitest.Stderr("err3")...)
	f.logs.Close(podNS, podName, "c")
	rest, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, "err3\n", string(rest), "the stream ends when the container stops")
}

func TestContainerLogsFollowClientCancel(t *testing.T) {
	defer goleak.VerifyNone(t)
	h, f := logServer(t)
	ts := httptest.NewServer(h)
	defer ts.Close()
	client := ts.Client()
	defer client.CloseIdleConnections()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/containerLogs/ns/p/c?follow=1&stream=Stdout", nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	for _, want := range []string{"out1\n", "out2\n"} {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, want, line)
	}
	require.Eventually(t, func() bool { return f.logs.Followers() == 1 }, 5*time.Second, time.Millisecond)

	cancel()
	_, err = io.ReadAll(r)
	require.Error(t, err)
	// The handler sees the connection go and its follow returns.
	require.Eventually(t, func() bool { return f.logs.Followers() == 0 }, 5*time.Second, time.Millisecond)
}

func TestContainerLogsNotImplemented(t *testing.T) {
	srv, _ := newServer(t, func(c *kubeletapi.Config) { c.Logs = nil })
	w := get(srv.Handler(), "/containerLogs/ns/p/c")
	require.Equal(t, http.StatusNotImplemented, w.Code)
}

// FuzzParseLogOptions: any query gives options or an error, never a
// panic; options that validate are within the API's bounds.
func FuzzParseLogOptions(f *testing.F) {
	f.Add("container=app&follow=true&tailLines=10&limitBytes=100&timestamps")
	f.Add("tail=all&previous=1&sinceSeconds=5")
	f.Add("tail=-3&sinceTime=2026-01-02T03:04:05Z&sinceSeconds=9")
	f.Add("stream=Stdout&limitBytes=0&follow=maybe")
	f.Add("tailLines=99999999999999999999999&%zz")
	f.Fuzz(func(t *testing.T, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return // the server answers 400 before parsing
		}
		opts, err := kubeletapi.ParseLogOptions(q)
		if err != nil {
			require.Nil(t, opts)
			return
		}
		if kubeletapi.ValidateLogOptions(opts) != nil {
			return
		}
		if opts.TailLines != nil {
			require.GreaterOrEqual(t, *opts.TailLines, int64(0))
		}
		if opts.LimitBytes != nil {
			require.GreaterOrEqual(t, *opts.LimitBytes, int64(1))
		}
		if opts.SinceSeconds != nil {
			require.GreaterOrEqual(t, *opts.SinceSeconds, int64(1))
		}
		require.False(t, opts.SinceSeconds != nil && opts.SinceTime != nil, "sinceSeconds and sinceTime exclude each other")
	})
}
