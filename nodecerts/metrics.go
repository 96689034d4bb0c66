package nodecerts

import (
	"crypto/tls"
	"fmt"
	"math"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/certificate"
	"k8s.io/utils/clock"
)

// The kubelet's certificate manager families, with upstream's names, help
// (with its stability level, as component-base writes it) and buckets.
const (
	clientTTLHelp = "[ALPHA] Gauge of the TTL (time-to-live) of the Kubelet's client certificate. " +
		"The value is in seconds until certificate expiry (negative if already expired). " +
		"If client certificate is invalid or unused, the value will be +INF."
	servingTTLHelp = "[ALPHA] Gauge of the shortest TTL (time-to-live) of the Kubelet's serving certificate. " +
		"The value is in seconds until certificate expiry (negative if already expired). " +
		"If serving certificate is invalid or unused, the value will be +INF."
	renewErrorsHelp = "[ALPHA] Counter of certificate renewal errors."
	rotationHelp    = "[ALPHA] Histogram of the number of seconds the previous certificate lived before being rotated."
)

// rotationBuckets are upstream's: a minute, an hour, 4 hours, a day, a
// week, a month, 3 months, 6 months, a year, 4 years.
var rotationBuckets = []float64{60, 3600, 14400, 86400, 604800, 2592000, 7776000, 15552000, 31104000, 124416000}

// certMetrics are what a certificate manager records (nil fields: none).
// They are handed to client-go's certificate.Config as they are.
type certMetrics struct {
	renewErrors certificate.Counter
	rotation    certificate.Histogram
}

// clientMetrics registers the client certificate's families on reg:
// kubelet_certificate_manager_client_ttl_seconds and
// kubelet_certificate_manager_client_expiration_renew_errors.
func clientMetrics(reg prometheus.Registerer, current func() *tls.Certificate, clk clock.PassiveClock) (certMetrics, error) {
	renew := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "kubelet", Subsystem: "certificate_manager",
		Name: "client_expiration_renew_errors", Help: renewErrorsHelp})
	ttl := ttlGauge("kubelet_certificate_manager_client_ttl_seconds", clientTTLHelp, current, clk)
	if err := register(reg, ttl, renew); err != nil {
		return certMetrics{}, err
	}
	return certMetrics{renewErrors: renew}, nil
}

// servingMetrics registers the serving certificate's families on reg:
// kubelet_certificate_manager_server_ttl_seconds,
// kubelet_server_expiration_renew_errors and
// kubelet_certificate_manager_server_rotation_seconds.
func servingMetrics(reg prometheus.Registerer, current func() *tls.Certificate, clk clock.PassiveClock) (certMetrics, error) {
	renew := prometheus.NewCounter(prometheus.CounterOpts{Subsystem: "kubelet",
		Name: "server_expiration_renew_errors", Help: renewErrorsHelp})
	rotation := prometheus.NewHistogram(prometheus.HistogramOpts{Subsystem: "kubelet",
		Name: "certificate_manager_server_rotation_seconds", Help: rotationHelp, Buckets: rotationBuckets})
	ttl := ttlGauge("kubelet_certificate_manager_server_ttl_seconds", servingTTLHelp, current, clk)
	if err := register(reg, ttl, renew, rotation); err != nil {
		return certMetrics{}, err
	}
	return certMetrics{renewErrors: renew, rotation: rotation}, nil
}

func register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("nodecerts: metrics: %w", err)
		}
	}
	return nil
}

// ttlGauge reports the seconds until current's certificate expires, +Inf
// without one, as the kubelet's certificate manager TTL gauges (on clk,
// where the kubelet uses time.Until).
func ttlGauge(name, help string, current func() *tls.Certificate, clk clock.PassiveClock) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
		if c := current(); c != nil && c.Leaf != nil {
			return math.Trunc(c.Leaf.NotAfter.Sub(clk.Now()).Seconds())
		}
		return math.Inf(1)
	})
}
