package kubeletapi_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeletapi"
)

func TestRequestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.Registerer, c.Clock = reg, clk
		// The check takes 250ms of the fake clock.
		c.HealthChecks = []kubeletapi.HealthCheck{{Name: "slow", Check: func() error {
			clk.Step(250 * time.Millisecond)
			return nil
		}}}
	})
	h := srv.Handler()
	require.Equal(t, http.StatusOK, get(h, "/healthz").Code)
	require.Equal(t, http.StatusOK, get(h, "/healthz/slow").Code)
	require.Equal(t, http.StatusOK, do(h, http.MethodPost, "/exec/ns/p/c?output=1").Code)
	do(h, http.MethodPatch, "/pods")            // not a method the kubelet counts
	get(h, "/metrics/nodes/n/metrics/resource") // not a bucket the kubelet has

	const labels = `long_running="false",method="GET",path="healthz",server_type="readwrite"`
	const exec = `long_running="true",method="POST",path="exec",server_type="readwrite"`
	const other = `long_running="false",method="GET",path="other",server_type="readwrite"`
	const patch = `long_running="false",method="other",path="pods",server_type="readwrite"`
	// buckets is the histogram of n requests of labels l, each of 250ms
	// when slow, else of no time.
	buckets := func(l string, n int, slow bool, sum string) string {
		var b strings.Builder
		for i, le := range []string{"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"} {
			in := n
			if slow && i < 5 {
				in = 0
			}
			b.WriteString("kubelet_http_requests_duration_seconds_bucket{" + l + `,le="` + le + `"} ` + strconv.Itoa(in) + "\n")
		}
		b.WriteString("kubelet_http_requests_duration_seconds_sum{" + l + "} " + sum + "\n")
		b.WriteString("kubelet_http_requests_duration_seconds_count{" + l + "} " + strconv.Itoa(n) + "\n")
		return b.String()
	}
	want := `# HELP kubelet_http_inflight_requests [ALPHA] Number of the inflight http requests
# TYPE kubelet_http_inflight_requests gauge
kubelet_http_inflight_requests{` + labels + `} 0
kubelet_http_inflight_requests{` + exec + `} 0
kubelet_http_inflight_requests{` + other + `} 0
kubelet_http_inflight_requests{` + patch + `} 0
# HELP kubelet_http_requests_duration_seconds [ALPHA] Duration in seconds to serve http requests
# TYPE kubelet_http_requests_duration_seconds histogram
` + buckets(labels, 2, true, "0.5") + buckets(exec, 1, false, "0") + buckets(other, 1, false, "0") + buckets(patch, 1, false, "0") +
		`# HELP kubelet_http_requests_total [ALPHA] Number of the http requests received since the server started
# TYPE kubelet_http_requests_total counter
kubelet_http_requests_total{` + labels + `} 2
kubelet_http_requests_total{` + exec + `} 1
kubelet_http_requests_total{` + other + `} 1
kubelet_http_requests_total{` + patch + `} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want)))

	// A second server on the same registry is refused, not a panic.
	cfg, _ := baseConfig()
	cfg.Registerer = reg
	_, err := kubeletapi.New(cfg)
	require.ErrorIs(t, err, kubeletapi.ErrInvalidConfig)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want)), "the registry is unchanged")
}

func TestPrefixGatherer(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, name := range []string{"prober_probe_total", "kubelet_running_pods", "prober_probe_duration_seconds"} {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: name})
		reg.MustRegister(g)
	}
	fams, err := kubeletapi.PrefixGatherer(reg, "prober_").Gather()
	require.NoError(t, err)
	var names []string
	for _, f := range fams {
		names = append(names, f.GetName())
	}
	require.Equal(t, []string{"prober_probe_duration_seconds", "prober_probe_total"}, names)
}
