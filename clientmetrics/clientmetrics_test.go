package clientmetrics_test

import (
	"context"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/clientmetrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newMetrics(t *testing.T) (*prometheus.Registry, *clocktesting.FakeClock, *clientmetrics.Metrics) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	clk := clocktesting.NewFakeClock(epoch)
	m, err := clientmetrics.New(clientmetrics.Config{Registerer: reg, Clock: clk})
	require.NoError(t, err)
	return reg, clk, m
}

// The adapters are exercised as client-go's REST client calls them; the
// global hooks are never installed by a test.
func TestRESTClient(t *testing.T) {
	reg, clk, m := newMetrics(t)
	opts := m.RESTClient()
	ctx := context.Background()
	u := url.URL{Scheme: "https", Host: "10.0.0.1:6443", Path: "/api/v1/pods"}
	opts.RequestLatency.Observe(ctx, "GET", u, 30*time.Millisecond)
	opts.RequestResult.Increment(ctx, "200", "GET", u.Host)
	opts.RequestResult.Increment(ctx, "200", "GET", u.Host)
	opts.RequestRetry.IncrementRetry(ctx, "429", "PATCH", u.Host)
	opts.TransportCreateCalls.Increment("miss")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP rest_client_requests_total [ALPHA] Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="10.0.0.1:6443",method="GET"} 2
# HELP rest_client_request_retries_total [ALPHA] Number of request retries, partitioned by status code, verb, and host.
# TYPE rest_client_request_retries_total counter
rest_client_request_retries_total{code="429",host="10.0.0.1:6443",verb="PATCH"} 1
# HELP rest_client_transport_create_calls_total [ALPHA] Number of calls to get a new transport, partitioned by the result of the operation hit: obtained from the cache, miss: created and added to the cache, miss-gc: recreated and added back to the cache after being garbage collected, uncacheable: created and not cached
# TYPE rest_client_transport_create_calls_total counter
rest_client_transport_create_calls_total{result="miss"} 1
`), "rest_client_requests_total", "rest_client_request_retries_total", "rest_client_transport_create_calls_total"))
	n, err := testutil.GatherAndCount(reg, "rest_client_request_duration_seconds")
	require.NoError(t, err)
	require.Equal(t, 1, n)

	ttl := func() float64 {
		families, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range families {
			if f.GetName() == "rest_client_exec_plugin_ttl_seconds" {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no ttl gauge")
		return 0
	}
	require.True(t, math.IsInf(ttl(), 1), "no exec plugin certificate")
	expiry := epoch.Add(time.Hour)
	opts.ClientCertExpiry.Set(&expiry)
	clk.Step(10 * time.Minute)
	require.Equal(t, 3000.0, ttl(), "on the injected clock")
	require.Nil(t, opts.ResolverLatency, "not served, as component-base")
}

func TestWorkqueues(t *testing.T) {
	reg, clk, m := newMetrics(t)
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "certs", MetricsProvider: m.Workqueues(), Clock: clk})
	defer q.ShutDown()
	q.Add("a")
	q.Add("b")
	item, _ := q.Get()
	q.Done(item)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP workqueue_adds_total [BETA] Total number of adds handled by workqueue
# TYPE workqueue_adds_total counter
workqueue_adds_total{name="certs"} 2
# HELP workqueue_depth [BETA] Current depth of workqueue
# TYPE workqueue_depth gauge
workqueue_depth{name="certs"} 1
`), "workqueue_adds_total", "workqueue_depth"))
}

func TestNewRefusesDuplicatesToleratesNil(t *testing.T) {
	reg, _, _ := newMetrics(t)
	_, err := clientmetrics.New(clientmetrics.Config{Registerer: reg})
	require.ErrorIs(t, err, clientmetrics.ErrInvalidConfig, "twice on one registry is an error, not a panic")
	m, err := clientmetrics.New(clientmetrics.Config{})
	require.NoError(t, err, "no registerer: nothing registered")
	m.RESTClient().RequestResult.Increment(context.Background(), "200", "GET", "h")
}
