package syncloop

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

// manifestServer is a real loopback HTTP server with a settable answer.
type manifestServer struct {
	mu     sync.Mutex
	status int
	body   string
	header string
	hits   int
	*httptest.Server
}

func newManifestServer() *manifestServer {
	s := &manifestServer{status: http.StatusOK}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.header = r.Header.Get("X-Node")
		s.hits++
		w.WriteHeader(s.status)
		_, _ = w.Write([]byte(s.body))
	}))
	return s
}

func (s *manifestServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits
}

func (s *manifestServer) answer(status int, body string) {
	s.mu.Lock()
	s.status, s.body = status, body
	s.mu.Unlock()
}

const podList = `{"apiVersion":"v1","kind":"PodList","items":[
 {"metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"img:%s"}]}},
 {"metadata":{"name":"y"},"spec":{"containers":[{"name":"c","image":"%s"}]}}]}`

func TestHTTPSourceFetch(t *testing.T) {
	ctx := context.Background()
	srv := newManifestServer()
	defer srv.Close()
	events := record.NewFakeRecorder(10)
	s, err := NewHTTPSource(HTTPSourceConfig{URL: srv.URL, NodeName: "node-a", Recorder: events, Header: http.Header{"X-Node": {"node-a"}}})
	require.NoError(t, err)
	step := func(name string, status int, body string, wantChanged, wantErr bool, want string) {
		t.Helper()
		srv.answer(status, body)
		changed, err := s.Fetch(ctx)
		require.Equal(t, wantErr, err != nil, "%s: %v", name, err)
		require.Equal(t, wantChanged, changed, name)
		require.Equal(t, want, podNames(s.Pods()), name)
	}
	step("404 before any success", http.StatusNotFound, "nope", false, true, "")
	step("single pod", 200, manifest("web", "img:1"), true, false, "web-node-a=img:1")
	require.Equal(t, "node-a", srv.header)
	step("same bytes", 200, manifest("web", "img:1"), false, false, "web-node-a=img:1")
	step("404 keeps the pods", http.StatusNotFound, "nope", false, true, "web-node-a=img:1")
	step("garbage keeps the pods", 200, "<html>oops", false, true, "web-node-a=img:1")
	step("pod list", 200, fmt.Sprintf(podList, "1", "img:1"), true, false, "x-node-a=img:1,y-node-a=img:1")
	step("one invalid item keeps its previous version", 200, fmt.Sprintf(podList, "2", ""), true, false, "x-node-a=img:2,y-node-a=img:1")
	ev := <-events.Events
	require.Contains(t, ev, "FailedValidation")
	require.Contains(t, ev, `(pod "y")`)
	require.Contains(t, ev, "spec.containers[0].image: Required value")
	step("empty body means no pods", 200, "", true, true, "")
}

func TestHTTPSourceRunFeedsTheLoop(t *testing.T) {
	defer goleak.VerifyNone(t)
	srv := newManifestServer()
	defer srv.Close()
	srv.answer(http.StatusNotFound, "")
	clk := clocktesting.NewFakeClock(t0)
	hs, err := NewHTTPSource(HTTPSourceConfig{URL: srv.URL, NodeName: "node-a", Clock: clk})
	require.NoError(t, err)
	rec := &recorder{}
	l, err := New(Config{Handler: rec, Sources: []Source{hs}, Clock: clk, SyncPeriod: time.Hour, HousekeepingPeriod: time.Hour})
	require.NoError(t, err)
	stop := startLoop(t, l)

	// A 404 does not make the source ready (upstream keeps waiting too).
	eventually(t, func() bool { return srv.requests() == 1 }, "first fetch done")
	require.False(t, l.SourcesReady())
	srv.answer(200, manifest("web", "img:1"))
	eventually(t, func() bool { _, ok := hs.NextWake(); return ok }, "source parked")
	next, _ := hs.NextWake()
	require.True(t, t0.Add(DefaultResyncPeriod).Equal(next), "next fetch %v", next)
	clk.Step(DefaultResyncPeriod)
	eventually(t, func() bool { return rec.len() == 1 }, "pods of the second fetch dispatched")
	require.Equal(t, []string{"ADD web-node-a"}, rec.take())
	require.True(t, l.SourcesReady())
	stop(nil)
	hs.cfg.Client.CloseIdleConnections()
}

// An endless manifest response is cut at the size limit: Fetch fails fast
// with bounded memory and the source keeps its previous pods.
func TestHTTPSourceEndlessBodyIsBounded(t *testing.T) {
	defer goleak.VerifyNone(t)
	var endless atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !endless.Load() {
			_, _ = w.Write([]byte(manifest("web", "img:1")))
			return
		}
		chunk := bytes.Repeat([]byte(" "), 64<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				return // the client hung up
			}
		}
	}))
	defer srv.Close()
	hs, err := NewHTTPSource(HTTPSourceConfig{URL: srv.URL, NodeName: "node-a"})
	require.NoError(t, err)
	defer hs.cfg.Client.CloseIdleConnections()
	ctx := context.Background()
	changed, err := hs.Fetch(ctx)
	require.NoError(t, err)
	require.True(t, changed)

	endless.Store(true)
	_, err = hs.Fetch(ctx)
	require.Error(t, err, "an endless body is refused")
	require.Len(t, hs.Pods(), 1, "the previous pods stay")
	require.Equal(t, "web-node-a", hs.Pods()[0].Name)
}

// A manifest file above the size limit is reported, not read whole.
func TestFileSourceOversizedManifest(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ok.yaml"), manifest("ok", "img:1"))
	big, err := os.Create(filepath.Join(dir, "big.yaml"))
	require.NoError(t, err)
	require.NoError(t, big.Truncate(maxManifestBytes+1)) // sparse: no disk used
	require.NoError(t, big.Close())
	fs, err := NewFileSource(FileSourceConfig{Path: dir, NodeName: "node-a"})
	require.NoError(t, err)
	_, err = fs.Scan(context.Background(), true)
	require.NoError(t, err, "one bad file does not fail the directory")
	require.Len(t, fs.Pods(), 1)
	require.Equal(t, "ok-node-a", fs.Pods()[0].Name)
}
