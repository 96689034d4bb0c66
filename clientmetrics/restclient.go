package clientmetrics

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/metrics"
	"k8s.io/utils/clock"
)

// ErrInvalidConfig wraps the errors New returns for a Config it cannot
// use.
var ErrInvalidConfig = errors.New("clientmetrics: invalid config")

// Config configures the metrics.
type Config struct {
	// Registerer receives the collectors; nil registers nothing (the
	// adapters then record into collectors nobody serves).
	Registerer prometheus.Registerer
	// Clock computes the exec plugin certificate's TTL; default the real
	// clock.
	Clock clock.PassiveClock
}

// Metrics holds client-go's collectors; RESTClient and Workqueues adapt
// them to client-go's hooks. It is safe for concurrent use.
type Metrics struct {
	clock clock.PassiveClock

	requestLatency, rateLimiterLatency   *prometheus.HistogramVec
	requestSize, responseSize            *prometheus.HistogramVec
	requestResult, requestRetry          *prometheus.CounterVec
	execCertRotation                     prometheus.Histogram
	execCalls                            *prometheus.CounterVec
	transportEntries                     prometheus.Gauge
	transportCreates, transportCAReloads *prometheus.CounterVec
	transportRotationGC                  prometheus.Counter
	transportCacheGC                     *prometheus.CounterVec

	expiryMu sync.Mutex
	expiry   *time.Time

	wq workqueueMetrics
}

// latencyBuckets are component-base's for the REST client's latencies;
// sizeBuckets for its sizes.
var (
	latencyBuckets = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0}
	sizeBuckets    = []float64{64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216}
)

// New builds the collectors and registers them on cfg.Registerer. It
// installs nothing in client-go: see the package doc. A collector already
// registered there is an error.
func New(cfg Config) (*Metrics, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	m := &Metrics{clock: cfg.Clock}
	hist := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: "[ALPHA] " + help, Buckets: buckets}, labels)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: "[ALPHA] " + help}, labels)
	}
	m.requestLatency = hist("rest_client_request_duration_seconds", "Request latency in seconds. Broken down by verb, and host.", latencyBuckets, "verb", "host")
	m.requestSize = hist("rest_client_request_size_bytes", "Request size in bytes. Broken down by verb and host.", sizeBuckets, "verb", "host")
	m.responseSize = hist("rest_client_response_size_bytes", "Response size in bytes. Broken down by verb and host.", sizeBuckets, "verb", "host")
	m.rateLimiterLatency = hist("rest_client_rate_limiter_duration_seconds", "Client side rate limiter latency in seconds. Broken down by verb, and host.", latencyBuckets, "verb", "host")
	m.requestResult = counter("rest_client_requests_total", "Number of HTTP requests, partitioned by status code, method, and host.", "code", "method", "host")
	m.requestRetry = counter("rest_client_request_retries_total", "Number of request retries, partitioned by status code, verb, and host.", "code", "verb", "host")
	execTTL := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rest_client_exec_plugin_ttl_seconds",
		Help: "[ALPHA] Gauge of the shortest TTL (time-to-live) of the client certificate(s) managed by the auth exec plugin. " +
			"The value is in seconds until certificate expiry (negative if already expired). " +
			"If auth exec plugins are unused or manage no TLS certificates, the value will be +INF."}, m.execTTL)
	m.execCertRotation = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "rest_client_exec_plugin_certificate_rotation_age",
		Help: "[ALPHA] Histogram of the number of seconds the last auth exec plugin client certificate lived before being rotated. " +
			"If auth exec plugin client certificates are unused, histogram will contain no data.",
		Buckets: []float64{600, 1800, 3600, 14400, 86400, 604800, 2592000, 7776000, 15552000, 31104000, 124416000}})
	m.execCalls = counter("rest_client_exec_plugin_call_total", "Number of calls to an exec plugin, partitioned by the type of "+
		"event encountered (no_error, plugin_execution_error, plugin_not_found_error, client_internal_error) and an optional exit code. "+
		"The exit code will be set to 0 if and only if the plugin call was successful.", "code", "call_status")
	m.transportEntries = prometheus.NewGauge(prometheus.GaugeOpts{Name: "rest_client_transport_cache_entries",
		Help: "[ALPHA] Number of transport entries in the internal cache."})
	m.transportCreates = counter("rest_client_transport_create_calls_total", "Number of calls to get a new transport, partitioned by the result of the operation "+
		"hit: obtained from the cache, miss: created and added to the cache, miss-gc: recreated and added back to the cache after being garbage collected, uncacheable: created and not cached", "result")
	m.transportCAReloads = counter("rest_client_transport_ca_reload_total", "Number of times a CA reload is attempted, partitioned by the result and reason for the reload attempt", "result", "reason")
	m.transportRotationGC = prometheus.NewCounter(prometheus.CounterOpts{Name: "rest_client_transport_cert_rotation_gc_calls_total",
		Help: "[ALPHA] Number of times a cert rotation goroutine cancel func is called via GC cleanup of the associated transport"})
	m.transportCacheGC = counter("rest_client_transport_cache_gc_calls_total", "Number of times a GC cleanup attempts to delete a transport cache entry, partitioned by the result: deleted, skipped", "result")
	m.wq = newWorkqueueMetrics()
	cs := []prometheus.Collector{m.requestLatency, m.requestSize, m.responseSize, m.rateLimiterLatency, m.requestResult,
		m.requestRetry, execTTL, m.execCertRotation, m.execCalls, m.transportEntries, m.transportCreates,
		m.transportCAReloads, m.transportRotationGC, m.transportCacheGC}
	if cfg.Registerer == nil {
		return m, nil
	}
	for _, c := range append(cs, m.wq.collectors()...) {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("%w: register metrics: %w", ErrInvalidConfig, err)
		}
	}
	return m, nil
}

// execTTL is the exec plugin certificate's TTL in seconds, +Inf without
// one.
func (m *Metrics) execTTL() float64 {
	m.expiryMu.Lock()
	defer m.expiryMu.Unlock()
	if m.expiry == nil {
		return math.Inf(1)
	}
	return m.expiry.Sub(m.clock.Now()).Seconds()
}

// RESTClient returns the adapters for k8s.io/client-go/tools/metrics.Register,
// which the program's main calls once.
func (m *Metrics) RESTClient() metrics.RegisterOpts {
	return metrics.RegisterOpts{
		ClientCertExpiry:             expiryAdapter{m},
		ClientCertRotationAge:        durationAdapter{m.execCertRotation},
		RequestLatency:               latencyAdapter{m.requestLatency},
		RequestSize:                  sizeAdapter{m.requestSize},
		ResponseSize:                 sizeAdapter{m.responseSize},
		RateLimiterLatency:           latencyAdapter{m.rateLimiterLatency},
		RequestResult:                resultAdapter{m.requestResult},
		RequestRetry:                 resultAdapter{m.requestRetry},
		ExecPluginCalls:              callsAdapter{m.execCalls},
		TransportCacheEntries:        cacheAdapter{m.transportEntries},
		TransportCreateCalls:         labelAdapter{m.transportCreates},
		TransportCAReloads:           reloadsAdapter{m.transportCAReloads},
		TransportCertRotationGCCalls: counterAdapter{m.transportRotationGC},
		TransportCacheGCCalls:        labelAdapter{m.transportCacheGC},
	}
}

type expiryAdapter struct{ m *Metrics }

func (a expiryAdapter) Set(expiry *time.Time) {
	a.m.expiryMu.Lock()
	defer a.m.expiryMu.Unlock()
	a.m.expiry = expiry
}

type durationAdapter struct{ h prometheus.Histogram }

func (a durationAdapter) Observe(d time.Duration) { a.h.Observe(d.Seconds()) }

type latencyAdapter struct{ v *prometheus.HistogramVec }

func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	a.v.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

type sizeAdapter struct{ v *prometheus.HistogramVec }

func (a sizeAdapter) Observe(_ context.Context, verb, host string, size float64) {
	a.v.WithLabelValues(verb, host).Observe(size)
}

// resultAdapter serves both the result and the retry counters (code,
// method or verb, host).
type resultAdapter struct{ v *prometheus.CounterVec }

func (a resultAdapter) Increment(_ context.Context, code, method, host string) {
	a.v.WithLabelValues(code, method, host).Inc()
}

func (a resultAdapter) IncrementRetry(_ context.Context, code, method, host string) {
	a.v.WithLabelValues(code, method, host).Inc()
}

type callsAdapter struct{ v *prometheus.CounterVec }

func (a callsAdapter) Increment(code int, status string) {
	a.v.WithLabelValues(strconv.Itoa(code), status).Inc()
}

type cacheAdapter struct{ g prometheus.Gauge }

func (a cacheAdapter) Observe(value int) { a.g.Set(float64(value)) }

type labelAdapter struct{ v *prometheus.CounterVec }

func (a labelAdapter) Increment(result string) { a.v.WithLabelValues(result).Inc() }

type reloadsAdapter struct{ v *prometheus.CounterVec }

func (a reloadsAdapter) Increment(result, reason string) { a.v.WithLabelValues(result, reason).Inc() }

type counterAdapter struct{ c prometheus.Counter }

func (a counterAdapter) Increment() { a.c.Inc() }
