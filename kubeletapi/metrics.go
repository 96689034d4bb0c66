package kubeletapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var metaPodList = metav1.TypeMeta{Kind: "PodList", APIVersion: v1.SchemeGroupVersion.String()}

// serverMetrics are the kubelet's HTTP request metrics.
type serverMetrics struct {
	requests *prometheus.CounterVec
	inflight *prometheus.GaugeVec
}

func newServerMetrics(reg prometheus.Registerer) (*serverMetrics, error) {
	labels := []string{"method", "path", "server_type", "long_running"}
	m := &serverMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: "http_requests_total",
			Help: "Number of the http requests received since the server started"}, labels),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "http_inflight_requests",
			Help: "Number of the inflight http requests"}, labels),
	}
	for _, c := range []prometheus.Collector{m.requests, m.inflight} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// pathBucket is the kubelet's metric path label: the first path segment,
// two for /metrics/<x>; unknown roots are "other" so that a client cannot
// grow the label set.
func pathBucket(p string) string {
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
	root := parts[0]
	switch root {
	case "metrics":
		if len(parts) > 1 && (parts[1] == "cadvisor" || parts[1] == "probes" || parts[1] == "resource") {
			return root + "/" + parts[1]
		}
		return root
	case "healthz", "pods", "stats", "run", "exec", "attach", "portForward", "containerLogs", "configz", "runningpods", "logs", "debug":
		return root
	}
	return "other"
}

func longRunning(bucket string) bool {
	switch bucket {
	case "exec", "attach", "portForward", "debug":
		return true
	}
	return false
}

// instrument counts requests of one server type ("readwrite",
// "readonly").
func (s *Server) instrument(serverType string, h http.Handler) http.Handler {
	if s.metrics == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := r.Method
		switch method {
		case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions:
		default:
			method = "other"
		}
		bucket := pathBucket(r.URL.Path)
		labels := []string{method, bucket, serverType, strconv.FormatBool(longRunning(bucket))}
		s.metrics.requests.WithLabelValues(labels...).Inc()
		g := s.metrics.inflight.WithLabelValues(labels...)
		g.Inc()
		defer g.Dec()
		h.ServeHTTP(w, r)
	})
}
