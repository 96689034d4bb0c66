package kubeletapitest_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/kubeletapi/kubeletapitest"
)

func pod(ns, name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func TestPodLister(t *testing.T) {
	var l kubeletapitest.PodLister // the zero value is usable
	_, ok := l.GetPodByName("ns", "a")
	require.False(t, ok)
	require.Empty(t, l.GetPods())

	p := pod("ns", "b")
	l.Add(p)
	p.Name = "mutated"
	got, ok := l.GetPodByName("ns", "b")
	require.True(t, ok, "stored as a copy")
	require.Equal(t, "b", got.Name)

	l.Add(pod("ns", "a"))
	l.Add(pod("default", "z"))
	var names []string
	for _, p := range l.GetPods() {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	require.Equal(t, []string{"default/z", "ns/a", "ns/b"}, names)

	l.Delete("ns", "a")
	_, ok = l.GetPodByName("ns", "a")
	require.False(t, ok)
	l.Set(pod("x", "y"))
	require.Len(t, l.GetPods(), 1)
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLogSourceOptions(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var s kubeletapitest.LogSource
	s.SetLines("ns", "p", "c",
		kubeletapitest.Line{Text: "a", Time: t0},
		kubeletapitest.Line{Text: "b", Time: t0.Add(time.Second), Stderr: true},
		kubeletapitest.Line{Text: "c", Time: t0.Add(2 * time.Second)})
	p := pod("ns", "p")
	tests := []struct {
		name string
		opts v1.PodLogOptions
		want string
	}{
		{"all", v1.PodLogOptions{}, "a\nb\nc\n"},
		{"timestamps", v1.PodLogOptions{Timestamps: true}, "2024-01-01T00:00:00Z a\n2024-01-01T00:00:01Z b\n2024-01-01T00:00:02Z c\n"},
		{"sinceTime", v1.PodLogOptions{SinceTime: ptr.To(metav1.NewTime(t0.Add(time.Second)))}, "b\nc\n"},
		{"tail", v1.PodLogOptions{TailLines: ptr.To[int64](1)}, "c\n"},
		{"tail beyond", v1.PodLogOptions{TailLines: ptr.To[int64](10)}, "a\nb\nc\n"},
		{"limit", v1.PodLogOptions{LimitBytes: ptr.To[int64](3)}, "a\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, s.ContainerLogs(context.Background(), p, "c", &tt.opts, &out, &out))
			require.Equal(t, tt.want, out.String())
		})
	}
	var out bytes.Buffer
	require.NoError(t, s.ContainerLogs(context.Background(), p, "c", &v1.PodLogOptions{}, nil, &out))
	require.Equal(t, "b\n", out.String(), "stderr only")

	calls := s.Calls()
	require.Len(t, calls, len(tests)+1)
	require.Equal(t, "ns/p", calls[0].Pod.String())
	require.Equal(t, kubeletapitest.LogCall{Pod: calls[0].Pod, Container: "c", Stdout: false, Stderr: true}, calls[len(calls)-1])

	err := s.ContainerLogs(context.Background(), p, "other", &v1.PodLogOptions{}, &out, &out)
	require.EqualError(t, err, `container "other" in pod "p" is not available`)
	boom := errors.New("boom")
	s.SetError("ns", "p", "c", boom)
	require.ErrorIs(t, s.ContainerLogs(context.Background(), p, "c", &v1.PodLogOptions{}, &out, &out), boom)
}

func TestLogSourceFollow(t *testing.T) {
	defer goleak.VerifyNone(t)
	var s kubeletapitest.LogSource
	s.SetLines("ns", "p", "c", kubeletapitest.Stdout("a")...)
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- s.ContainerLogs(context.Background(), pod("ns", "p"), "c", &v1.PodLogOptions{Follow: true}, &out, &out)
	}()
	require.Eventually(t, func() bool { return s.Followers() == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, "a\n", out.String())

	s.Append("ns", "p", "c", kubeletapitest.Stderr("b")...)
	s.Append("ns", "p", "other", kubeletapitest.Stdout("x")...) // wakes, writes nothing
	require.Eventually(t, func() bool { return out.String() == "a\nb\n" && s.Followers() == 1 }, 5*time.Second, time.Millisecond)

	s.Append("ns", "p", "c", kubeletapitest.Stdout("c")...)
	s.Close("ns", "p", "c")
	require.NoError(t, <-done)
	require.Equal(t, "a\nb\nc\n", out.String())
	require.Equal(t, 0, s.Followers())

	// A follow of a closed log returns once written.
	var again bytes.Buffer
	require.NoError(t, s.ContainerLogs(context.Background(), pod("ns", "p"), "c", &v1.PodLogOptions{Follow: true}, &again, &again))
	require.Equal(t, "a\nb\nc\n", again.String())
}

func TestLogSourceFollowCancel(t *testing.T) {
	defer goleak.VerifyNone(t)
	var s kubeletapitest.LogSource
	s.SetLines("ns", "p", "c")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.ContainerLogs(ctx, pod("ns", "p"), "c", &v1.PodLogOptions{Follow: true, LimitBytes: ptr.To[int64](4)}, nil, &bytes.Buffer{})
	}()
	require.Eventually(t, func() bool { return s.Followers() == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Equal(t, 0, s.Followers())
}

func TestLogSourceFollowLimit(t *testing.T) {
	defer goleak.VerifyNone(t)
	var s kubeletapitest.LogSource
	s.SetLines("ns", "p", "c", kubeletapitest.Stdout("ab")...)
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- s.ContainerLogs(context.Background(), pod("ns", "p"), "c", &v1.PodLogOptions{Follow: true, LimitBytes: ptr.To[int64](5)}, &out, nil)
	}()
	require.Eventually(t, func() bool { return s.Followers() == 1 }, 5*time.Second, time.Millisecond)
	s.Append("ns", "p", "c", kubeletapitest.Stdout("cdef")...)
	require.NoError(t, <-done, "the follow ends at the byte limit")
	require.Equal(t, "ab\ncd", out.String())
}

func TestStreamer(t *testing.T) {
	var s kubeletapitest.Streamer
	p := pod("ns", "p")
	h, err := s.Exec(context.Background(), p, "c", []string{"sh"}, kubeletapi.StreamOptions{Stdout: true})
	require.NoError(t, err)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", nil))
	require.Equal(t, "ok", w.Body.String(), "the default handler")

	mine := http.NotFoundHandler()
	s.SetHandler(mine)
	_, err = s.Attach(context.Background(), p, "c", kubeletapi.StreamOptions{Stdin: true})
	require.NoError(t, err)
	s.SetError(kubeletapi.NotFound("nope"))
	_, err = s.PortForward(context.Background(), p, []int32{80})
	require.EqualError(t, err, "nope")

	calls := s.Calls()
	require.Len(t, calls, 3)
	require.Equal(t, kubeletapitest.StreamCall{Method: "Exec", Pod: p, Container: "c", Cmd: []string{"sh"}, Options: kubeletapi.StreamOptions{Stdout: true}}, calls[0])
	require.Equal(t, kubeletapitest.StreamCall{Method: "Attach", Pod: p, Container: "c", Options: kubeletapi.StreamOptions{Stdin: true}}, calls[1])
	require.Equal(t, kubeletapitest.StreamCall{Method: "PortForward", Pod: p, Ports: []int32{80}}, calls[2])
}

func TestRunner(t *testing.T) {
	var r kubeletapitest.Runner
	out, err := r.RunInContainer(context.Background(), pod("ns", "p"), "c", []string{"date"})
	require.NoError(t, err)
	require.Empty(t, out)
	r.SetOutput([]byte("hi"), errors.New("exit 1"))
	out, err = r.RunInContainer(context.Background(), pod("ns", "p"), "c", []string{"false"})
	require.EqualError(t, err, "exit 1")
	require.Equal(t, "hi", string(out))
	calls := r.Calls()
	require.Len(t, calls, 2)
	require.Equal(t, []string{"false"}, calls[1].Cmd)
	require.Equal(t, "c", calls[1].Container)
	require.Equal(t, "ns/p", calls[1].Pod.String())
}

func TestSummaryProvider(t *testing.T) {
	var p kubeletapitest.SummaryProvider
	s, err := p.Get(context.Background())
	require.NoError(t, err)
	require.Equal(t, &statsapi.Summary{}, s)
	want := &statsapi.Summary{Node: statsapi.NodeStats{NodeName: "n"}}
	p.Set(want)
	s, err = p.Get(context.Background())
	require.NoError(t, err)
	require.Same(t, want, s)
	p.SetError(errors.New("down"))
	_, err = p.Get(context.Background())
	require.EqualError(t, err, "down")
	p.Set(want)
	_, err = p.Get(context.Background())
	require.NoError(t, err, "Set clears the error")
	require.Equal(t, 4, p.Calls())
}
