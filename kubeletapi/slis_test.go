package kubeletapi_test

import (
	"errors"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeletapi"
)

// sliStart is the fake clock's time in the SLI tests: the process start
// time reported where procfs cannot be read.
var sliStart = time.Unix(1_700_000_000, 0)

// wantProcessStart is the process_start_time_seconds sample the kubelet
// would serve: on Linux this process's start time as the Prometheus
// client's process collector reads it (component-base reads the same
// procfs figure), elsewhere the time New ran.
func wantProcessStart(t *testing.T) string {
	t.Helper()
	v := float64(sliStart.Unix())
	if runtime.GOOS == "linux" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		families, err := reg.Gather()
		require.NoError(t, err)
		v = 0
		for _, f := range families {
			if f.GetName() == "process_start_time_seconds" {
				v = f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		require.Positive(t, v, "the process collector reports a start time")
		require.LessOrEqual(t, v, float64(time.Now().Unix()+1), "the process started before now")
	}
	return "# HELP process_start_time_seconds [ALPHA] Start time of the process since unix epoch in seconds.\n" +
		"# TYPE process_start_time_seconds gauge\n" +
		"process_start_time_seconds " + strconv.FormatFloat(v, 'g', -1, 64) + "\n"
}

// sliText is the /metrics/slis text for the given gauge and counter
// samples (label sets and values, in the order Prometheus sorts them),
// followed by start, the process start time family.
func sliText(gauges, counters []string, start string) string {
	var b strings.Builder
	if len(gauges) > 0 {
		b.WriteString("# HELP kubernetes_healthcheck [STABLE] This metric records the result of a single healthcheck.\n" +
			"# TYPE kubernetes_healthcheck gauge\n")
		for _, g := range gauges {
			b.WriteString("kubernetes_healthcheck" + g + "\n")
		}
	}
	if len(counters) > 0 {
		b.WriteString("# HELP kubernetes_healthchecks_total [STABLE] This metric records the results of all healthcheck.\n" +
			"# TYPE kubernetes_healthchecks_total counter\n")
		for _, c := range counters {
			b.WriteString("kubernetes_healthchecks_total" + c + "\n")
		}
	}
	return b.String() + start
}

// getSLIs GETs /metrics/slis through h and returns the body.
func getSLIs(t *testing.T, h http.Handler) string {
	t.Helper()
	w := get(h, "/metrics/slis")
	require.Equal(t, http.StatusOK, w.Code)
	require.True(t, strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain; version=0.0.4"), w.Header().Get("Content-Type"))
	return w.Body.String()
}

func TestSLIMetrics(t *testing.T) {
	var syncloopErr error
	reg := prometheus.NewRegistry()
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.Clock, c.Registerer = testingclock.NewFakeClock(sliStart), reg
		c.HealthChecks = []kubeletapi.HealthCheck{
			{Name: "syncloop", Check: func() error { return syncloopErr }},
			{Name: "pleg", Check: func() error { return nil }},
		}
	})
	h := srv.Handler()
	start := wantProcessStart(t)

	// Before any /healthz: only the process start time.
	require.Equal(t, start, getSLIs(t, h))

	require.Equal(t, http.StatusOK, get(h, "/healthz").Code)
	require.Equal(t, sliText(
		[]string{`{name="ping",type="healthz"} 1`, `{name="pleg",type="healthz"} 1`, `{name="syncloop",type="healthz"} 1`},
		[]string{`{name="ping",status="success",type="healthz"} 1`, `{name="pleg",status="success",type="healthz"} 1`,
			`{name="syncloop",status="success",type="healthz"} 1`},
		start), getSLIs(t, h))

	syncloopErr = errors.New("loop stuck for 3m")
	require.Equal(t, http.StatusInternalServerError, get(h, "/healthz?verbose").Code)
	// A single check's path and an excluded check record nothing.
	require.Equal(t, http.StatusInternalServerError, get(h, "/healthz/syncloop").Code)
	require.Equal(t, http.StatusOK, get(h, "/healthz?exclude=syncloop").Code)
	want := sliText(
		[]string{`{name="ping",type="healthz"} 1`, `{name="pleg",type="healthz"} 1`, `{name="syncloop",type="healthz"} 0`},
		[]string{`{name="ping",status="success",type="healthz"} 3`, `{name="pleg",status="success",type="healthz"} 3`,
			`{name="syncloop",status="error",type="healthz"} 1`, `{name="syncloop",status="success",type="healthz"} 1`},
		start)
	require.Equal(t, want, getSLIs(t, h))

	// The kubelet has no request bucket for metrics/slis: "other".
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubelet_http_requests_total [ALPHA] Number of the http requests received since the server started
# TYPE kubelet_http_requests_total counter
kubelet_http_requests_total{long_running="false",method="GET",path="healthz",server_type="readwrite"} 4
kubelet_http_requests_total{long_running="false",method="GET",path="other",server_type="readwrite"} 3
`), "kubelet_http_requests_total"))

	// Another server has a registry of its own.
	other, _ := newServer(t, func(c *kubeletapi.Config) { c.Clock = testingclock.NewFakeClock(sliStart) })
	require.Equal(t, start, getSLIs(t, other.Handler()))
	require.Equal(t, want, getSLIs(t, h))

	// DELETE resets the health check series (component-base's
	// HandlerWithReset); the process start time stays.
	w := do(h, http.MethodDelete, "/metrics/slis")
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, "metrics reset\n", w.Body.String())
	require.Equal(t, start, getSLIs(t, h))
	syncloopErr = nil
	require.Equal(t, http.StatusOK, get(h, "/healthz").Code)
	require.Equal(t, sliText(
		[]string{`{name="ping",type="healthz"} 1`, `{name="pleg",type="healthz"} 1`, `{name="syncloop",type="healthz"} 1`},
		[]string{`{name="ping",status="success",type="healthz"} 1`, `{name="pleg",status="success",type="healthz"} 1`,
			`{name="syncloop",status="success",type="healthz"} 1`},
		start), getSLIs(t, h))
	require.Equal(t, http.StatusMethodNotAllowed, do(h, http.MethodPost, "/metrics/slis").Code)
}

func TestSLIMetricsAuthorization(t *testing.T) {
	for _, tt := range []struct {
		method, verb string
		code         int
		body         string
	}{
		{http.MethodGet, "get", http.StatusOK, "# HELP process_start_time_seconds"},
		{http.MethodDelete, "delete", http.StatusOK, "metrics reset\n"},
	} {
		t.Run(tt.method, func(t *testing.T) {
			authz := &recordingAuthorizer{allow: map[string]bool{"metrics": true}}
			srv, _ := newServer(t, func(c *kubeletapi.Config) {
				c.Authenticator, c.Authorizer = headerAuthenticator{}, authz
			})
			w := do(srv.Handler(), tt.method, "/metrics/slis", "Authorization", "Bearer alice")
			require.Equal(t, tt.code, w.Code)
			require.True(t, strings.HasPrefix(w.Body.String(), tt.body), w.Body.String())
			attrs := authz.recorded()
			require.Len(t, attrs, 1)
			require.Equal(t, tt.verb, attrs[0].GetVerb())
			require.Equal(t, "nodes", attrs[0].GetResource())
			require.Equal(t, "metrics", attrs[0].GetSubresource())
			require.Equal(t, nodeName, attrs[0].GetName())

			// Allowed proxy but not metrics: refused.
			authz = &recordingAuthorizer{allow: map[string]bool{"proxy": true}}
			srv, _ = newServer(t, func(c *kubeletapi.Config) {
				c.Authenticator, c.Authorizer = headerAuthenticator{}, authz
			})
			w = do(srv.Handler(), tt.method, "/metrics/slis", "Authorization", "Bearer alice")
			require.Equal(t, http.StatusForbidden, w.Code)
			require.Equal(t, "Forbidden (user=alice, verb="+tt.verb+", resource=nodes, subresource(s)=[metrics])\n", w.Body.String())
		})
	}
}

// TestSLIMetricsEveryListener: the /healthz of the plain healthz port and
// of the read-only port record on the one registry, which the read-only
// port serves too, as the kubelet's global registry is.
func TestSLIMetricsEveryListener(t *testing.T) {
	defer goleak.VerifyNone(t)
	api, healthz, readOnly := listen(t), listen(t), listen(t)
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.Clock = testingclock.NewFakeClock(sliStart)
		c.Listener, c.HealthzListener, c.ReadOnlyListener = api, healthz, readOnly
	})
	stop := startServer(t, srv)
	defer stop()
	start := wantProcessStart(t)

	plain := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	fetch := func(c *http.Client, url string) string {
		t.Helper()
		resp, err := c.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, url)
		return string(body)
	}
	require.Equal(t, "ok", fetch(plain, "http://"+healthz.Addr().String()+"/healthz"))
	require.Equal(t, "ok", fetch(plain, "http://"+readOnly.Addr().String()+"/healthz"))
	require.Equal(t, "ok", fetch(httpsClient(), "https://"+api.Addr().String()+"/healthz"))
	want := sliText([]string{`{name="ping",type="healthz"} 1`}, []string{`{name="ping",status="success",type="healthz"} 3`}, start)
	require.Equal(t, want, fetch(plain, "http://"+readOnly.Addr().String()+"/metrics/slis"))
	require.Equal(t, want, fetch(httpsClient(), "https://"+api.Addr().String()+"/metrics/slis"))
}
