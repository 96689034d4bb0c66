package prober

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
)

func TestHTTPProbe(t *testing.T) {
	defer goleak.VerifyNone(t)
	var other atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { other.Add(1) }))
	defer elsewhere.Close()
	_, elsewherePort := hostPort(t, elsewhere.Listener.Addr().String())

	var hits atomic.Int32
	var lastReq atomic.Pointer[http.Request]
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { lastReq.Store(r) })
	mux.HandleFunc("/teapot", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	mux.HandleFunc("/500", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
	mux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/same-to-404", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/nope", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/other", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", fmt.Sprintf("http://localhost:%d/", elsewherePort))
		w.WriteHeader(http.StatusFound)
		_, _ = io.WriteString(w, "gone")
	})
	mux.HandleFunc("/not-modified", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotModified) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { <-release })
	mux.HandleFunc("/slow-body", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-release
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		mux.ServeHTTP(w, r)
	}))
	defer srv.Close()
	defer close(release)
	host, port := hostPort(t, srv.Listener.Addr().String())

	cases := []struct {
		name      string
		path      string
		timeout   time.Duration
		want      outcome
		wantMsg   string // substring
		wantHits  int32
		wantOther int32
	}{
		{name: "200", path: "/ok", want: success, wantHits: 1},
		{name: "404", path: "/missing", want: failure, wantMsg: "HTTP probe failed with statuscode: 404", wantHits: 1},
		{name: "418", path: "/teapot", want: failure, wantMsg: "statuscode: 418", wantHits: 1},
		{name: "500", path: "/500", want: failure, wantMsg: "statuscode: 500", wantHits: 1},
		{name: "same-host redirect followed", path: "/same", want: success, wantHits: 2},
		{name: "same-host redirect to 404", path: "/same-to-404", want: failure, wantMsg: "statuscode: 404", wantHits: 2},
		{name: "redirect loop stops after 10", path: "/loop", want: failure, wantMsg: "stopped after 10 redirects", wantHits: 10},
		{name: "other-host redirect is a warning", path: "/other", want: warning, wantMsg: "Probe terminated redirects, Response body: gone", wantHits: 1},
		{name: "304 is a warning", path: "/not-modified", want: warning, wantHits: 1},
		{name: "hang times out", path: "/slow", timeout: 200 * time.Millisecond, want: failure, wantMsg: "Client.Timeout", wantHits: 1},
		{name: "hang in body times out", path: "/slow-body", timeout: 200 * time.Millisecond, want: failure, wantMsg: "Client.Timeout", wantHits: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hits.Store(0)
			other.Store(0)
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			out, msg := httpProbeOnce(t, realNet(), &v1.HTTPGetAction{Path: tc.path, Port: intPort(port)}, host, timeout)
			require.Equal(t, tc.want, out, msg)
			require.Contains(t, msg, tc.wantMsg)
			require.Equal(t, tc.wantHits, hits.Load())
			require.Equal(t, tc.wantOther, other.Load())
		})
	}

	t.Run("request", func(t *testing.T) {
		a := &v1.HTTPGetAction{Path: "/ok?x=1", Port: intPort(port), HTTPHeaders: []v1.HTTPHeader{
			{Name: "x-custom", Value: "a"}, {Name: "Host", Value: "example.com"}}}
		out, msg := httpProbeOnce(t, realNet(), a, host, time.Second)
		require.Equal(t, success, out, msg)
		r := lastReq.Load()
		require.Equal(t, "GET", r.Method)
		require.Equal(t, "/ok?x=1", r.RequestURI)
		require.Equal(t, "example.com", r.Host)
		require.Equal(t, "kube-probe/1.36", r.Header.Get("User-Agent"))
		require.Equal(t, "*/*", r.Header.Get("Accept"))
		require.Equal(t, "a", r.Header.Get("X-Custom"))
		require.True(t, r.Close, "Connection: close")
		require.Empty(t, r.Header.Get("Accept-Encoding"))
	})
	t.Run("own user agent, empty accept", func(t *testing.T) {
		a := &v1.HTTPGetAction{Path: "/ok", Port: intPort(port), HTTPHeaders: []v1.HTTPHeader{
			{Name: "User-Agent", Value: "mine"}, {Name: "Accept", Value: ""}}}
		out, _ := httpProbeOnce(t, realNet(), a, host, time.Second)
		require.Equal(t, success, out)
		r := lastReq.Load()
		require.Equal(t, []string{"mine"}, r.Header.Values("User-Agent"))
		require.Empty(t, r.Header.Values("Accept"))
	})
	t.Run("empty user agent sends none, a second one is ignored", func(t *testing.T) {
		a := &v1.HTTPGetAction{Path: "/ok", Port: intPort(port), HTTPHeaders: []v1.HTTPHeader{{Name: "user-agent", Value: ""}}}
		out, _ := httpProbeOnce(t, realNet(), a, host, time.Second)
		require.Equal(t, success, out)
		require.Empty(t, lastReq.Load().Header.Values("User-Agent"))
		a.HTTPHeaders = []v1.HTTPHeader{{Name: "User-Agent", Value: "first"}, {Name: "User-Agent", Value: "second"}}
		out, _ = httpProbeOnce(t, realNet(), a, host, time.Second)
		require.Equal(t, success, out)
		require.Equal(t, []string{"first"}, lastReq.Load().Header.Values("User-Agent"))
	})
	t.Run("connection refused", func(t *testing.T) {
		out, msg := httpProbeOnce(t, realNet(), &v1.HTTPGetAction{Path: "/", Port: intPort(closedPort(t))}, "127.0.0.1", time.Second)
		require.Equal(t, failure, out)
		require.Contains(t, msg, "connection refused")
	})
}

func TestHTTPProbeHugeBody(t *testing.T) {
	defer goleak.VerifyNone(t)
	var written atomic.Int64
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		w.Header().Set("Content-Length", fmt.Sprint(1<<30))
		chunk := []byte(strings.Repeat("x", 64<<10))
		for written.Load() < 1<<30 {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	host, port := hostPort(t, srv.Listener.Addr().String())
	out, msg := httpProbeOnce(t, realNet(), &v1.HTTPGetAction{Path: "/", Port: intPort(port)}, host, 10*time.Second)
	require.Equal(t, success, out, msg)
	<-done // the reset connection ends the server's writes
	require.Less(t, written.Load(), int64(64<<20), "the probe read far more than its cap")
}

func TestHTTPProbeTLS(t *testing.T) {
	defer goleak.VerifyNone(t)
	var sni atomic.Value
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sni.Store(r.TLS.ServerName)
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/", http.StatusFound)
		}
	}))
	srv.StartTLS()
	defer srv.Close()
	_, port := hostPort(t, srv.Listener.Addr().String())
	for _, host := range []string{"127.0.0.1", "localhost"} {
		for _, path := range []string{"/", "/redirect"} {
			out, msg := httpProbeOnce(t, realNet(), &v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Path: path, Port: intPort(port)}, host, 5*time.Second)
			require.Equal(t, success, out, msg)
			want := ""
			if host == "localhost" {
				want = "localhost"
			}
			require.Equal(t, want, sni.Load(), "server name sent")
		}
	}
	// Plain HTTP against the TLS port fails.
	out, _ := httpProbeOnce(t, realNet(), &v1.HTTPGetAction{Path: "/", Port: intPort(port)}, "127.0.0.1", 5*time.Second)
	require.Equal(t, failure, out)
}
