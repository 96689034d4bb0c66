package kubeletapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var metaPodList = metav1.TypeMeta{Kind: "PodList", APIVersion: v1.SchemeGroupVersion.String()}

// serverMetrics are the kubelet's HTTP request metrics (help with its
// stability level, as component-base writes it).
type serverMetrics struct {
	requests *prometheus.CounterVec
	inflight *prometheus.GaugeVec
	duration *prometheus.HistogramVec
}

// newServerMetrics registers the collectors on reg. A collector already
// registered there is an ErrInvalidConfig, and nothing is left
// registered.
func newServerMetrics(reg prometheus.Registerer) (*serverMetrics, error) {
	labels := []string{"method", "path", "server_type", "long_running"}
	m := &serverMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: "http_requests_total",
			Help: "[ALPHA] Number of the http requests received since the server started"}, labels),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "http_inflight_requests",
			Help: "[ALPHA] Number of the inflight http requests"}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "http_requests_duration_seconds",
			Help: "[ALPHA] Duration in seconds to serve http requests", Buckets: prometheus.DefBuckets}, labels),
	}
	collectors := []prometheus.Collector{m.requests, m.inflight, m.duration}
	for i, c := range collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range collectors[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("%w: register metrics: %w", ErrInvalidConfig, err)
		}
	}
	return m, nil
}

// methodBucket is the kubelet's metric method label: the method if it is
// one the kubelet knows, else "other" (PATCH too, as the kubelet).
func methodBucket(method string) string {
	switch method {
	case http.MethodOptions, http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodTrace, http.MethodConnect:
		return method
	}
	return "other"
}

// pathBucket is the kubelet's metric path label: the first path segment,
// "metrics/<x>" for a path under /metrics/, if the kubelet's server of
// that type (readonly: the unauthenticated port) registers it; anything
// else is "other", so that a client cannot grow the label set.
func pathBucket(p string, readOnly bool) string {
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
	root := parts[0]
	if root == "metrics" && len(parts) > 1 {
		root += "/" + parts[1]
	}
	switch root {
	case "healthz", "pods", "stats", "metrics", "metrics/cadvisor", "metrics/probes", "metrics/resource",
		"run", "exec", "attach", "portForward", "containerLogs", "runningpods", "logs":
		return root
	case "configz", "debug", "checkpoint", "flagz", "statusz":
		// Registered with the debugging handlers (and, for the last
		// three, v1.36's default gates), on the authenticated port only.
		if !readOnly {
			return root
		}
	}
	return "other"
}

// longRunning reports whether requests of the path bucket are
// long-running: exec, attach, port forwarding and debug.
func longRunning(bucket string) bool {
	switch bucket {
	case "exec", "attach", "portForward", "debug":
		return true
	}
	return false
}

// instrument counts and times requests of one server type ("readwrite",
// "readonly") on Config.Clock.
func (s *Server) instrument(serverType string, h http.Handler) http.Handler {
	if s.metrics == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bucket := pathBucket(r.URL.Path, serverType == "readonly")
		labels := []string{methodBucket(r.Method), bucket, serverType, strconv.FormatBool(longRunning(bucket))}
		s.metrics.requests.WithLabelValues(labels...).Inc()
		g := s.metrics.inflight.WithLabelValues(labels...)
		g.Inc()
		defer g.Dec()
		defer s.observe(labels, s.cfg.Clock.Now())
		h.ServeHTTP(w, r)
	})
}

// observe records a request with labels that started at start.
func (s *Server) observe(labels []string, start time.Time) {
	s.metrics.duration.WithLabelValues(labels...).Observe(s.cfg.Clock.Since(start).Seconds())
}

// PrefixGatherer gathers the families of g whose names start with prefix:
// a host with one registry serves /metrics/probes as
// PrefixGatherer(registry, "prober_").
func PrefixGatherer(g prometheus.Gatherer, prefix string) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		all, err := g.Gather()
		out := all[:0]
		for _, f := range all {
			if strings.HasPrefix(f.GetName(), prefix) {
				out = append(out, f)
			}
		}
		return out, err
	})
}
