package nodecerts_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/nodecerts"
)

// gauge reads one gauge or counter of reg by name.
func gauge(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			m := f.GetMetric()[0]
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}

// The client's TTL follows its certificate on the injected clock, and a
// request that cannot be made counts as a renewal error.
func TestClientMetrics(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	clk := clocktesting.NewFakeClock(time.Now())
	certFile, keyFile := ca.keyPair(t, dir, "system:node:n1", clk.Now().Add(24*time.Hour))
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeKubeconfig(t, kubeconfig, server, ca.pem, "", certFile, keyFile)
	reg := prometheus.NewPedanticRegistry()
	c, err := nodecerts.NewClient(nodecerts.ClientConfig{NodeName: "n1", Kubeconfig: kubeconfig,
		CertDir: filepath.Join(dir, "pki"), Rotate: true, Registerer: reg, Clock: clk})
	require.NoError(t, err)
	want := math.Trunc(c.Current().Leaf.NotAfter.Sub(clk.Now()).Seconds())
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubelet_certificate_manager_client_expiration_renew_errors [ALPHA] Counter of certificate renewal errors.
# TYPE kubelet_certificate_manager_client_expiration_renew_errors counter
kubelet_certificate_manager_client_expiration_renew_errors 0
# HELP kubelet_certificate_manager_client_ttl_seconds [ALPHA] Gauge of the TTL (time-to-live) of the Kubelet's client certificate. The value is in seconds until certificate expiry (negative if already expired). If client certificate is invalid or unused, the value will be +INF.
# TYPE kubelet_certificate_manager_client_ttl_seconds gauge
kubelet_certificate_manager_client_ttl_seconds `+strconv.FormatFloat(want, 'g', -1, 64)+`
`)))
	clk.Step(time.Hour)
	require.Equal(t, want-3600, gauge(t, reg, "kubelet_certificate_manager_client_ttl_seconds"))

	_, err = nodecerts.NewClient(nodecerts.ClientConfig{NodeName: "n1", Kubeconfig: kubeconfig,
		CertDir: filepath.Join(dir, "pki"), Rotate: true, Registerer: reg})
	require.ErrorContains(t, err, "nodecerts: metrics", "a second client on one registry is refused, not a panic")

	// Bootstrapping against a server that cannot be reached: every
	// attempt of the certificate manager is a renewal error, and there is
	// no certificate (+Inf).
	boot := filepath.Join(dir, "bootstrap.kubeconfig")
	writeKubeconfig(t, boot, server, ca.pem, "tok", "", "")
	reg = prometheus.NewPedanticRegistry()
	c, err = nodecerts.NewClient(nodecerts.ClientConfig{NodeName: "n1", Kubeconfig: filepath.Join(dir, "other"),
		BootstrapKubeconfig: boot, CertDir: filepath.Join(dir, "pki2"), Registerer: reg, Clock: clk,
		NewClientset: func(*rest.Config) (kubernetes.Interface, error) { return nil, errors.New("no server") }})
	require.NoError(t, err)
	require.True(t, math.IsInf(gauge(t, reg, "kubelet_certificate_manager_client_ttl_seconds"), 1))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	require.Eventually(t, func() bool {
		return gauge(t, reg, "kubelet_certificate_manager_client_expiration_renew_errors") >= 1
	}, 30*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}

// The serving certificate is rotated when the node's addresses are not
// the ones it names: the first request is denied (a renewal error), the
// second issued, and the previous certificate's age is observed.
func TestServingMetrics(t *testing.T) {
	ca := newTestCA(t)
	signer := newFakeSigner(t, ca)
	var requests atomic.Int32
	signer.decide = func(*certificatesv1.CertificateSigningRequest) (time.Duration, bool) {
		return time.Hour, requests.Add(1) == 1
	}
	dir := t.TempDir()
	// From an earlier run: it names no IP, and has lived 47 of its 48h.
	certFile, keyFile := ca.keyPair(t, dir, "system:node:n1", time.Now().Add(time.Hour))
	clk := clocktesting.NewFakeClock(time.Now())
	reg := prometheus.NewPedanticRegistry()
	s, err := nodecerts.NewServing(nodecerts.ServingConfig{NodeName: "n1", Client: signer.client,
		CertDir: filepath.Join(dir, "pki"), CertFile: certFile, KeyFile: keyFile, Registerer: reg, Clock: clk,
		Addresses: func() []v1.NodeAddress { return []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.2"}} }})
	require.NoError(t, err)
	old := s.Current()
	require.Equal(t, math.Trunc(old.Leaf.NotAfter.Sub(clk.Now()).Seconds()),
		gauge(t, reg, "kubelet_certificate_manager_server_ttl_seconds"))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	require.Eventually(t, func() bool { c := s.Current(); return c != nil && len(c.Leaf.IPAddresses) == 1 },
		30*time.Second, 10*time.Millisecond, "the certificate naming the node's IP is served")
	require.Equal(t, 1.0, gauge(t, reg, "kubelet_server_expiration_renew_errors"), "the denied request")
	cur := s.Current()
	require.Equal(t, math.Trunc(cur.Leaf.NotAfter.Sub(clk.Now()).Seconds()),
		gauge(t, reg, "kubelet_certificate_manager_server_ttl_seconds"))

	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "kubelet_certificate_manager_server_rotation_seconds" {
			continue
		}
		require.Equal(t, "[ALPHA] Histogram of the number of seconds the previous certificate lived before being rotated.", f.GetHelp())
		h := f.GetMetric()[0].GetHistogram()
		require.Equal(t, uint64(1), h.GetSampleCount())
		lived := time.Duration(h.GetSampleSum() * float64(time.Second))
		require.InDelta(t, float64(47*time.Hour), float64(lived), float64(time.Minute), "the previous certificate lived 47h")
		require.Len(t, h.GetBucket(), 10, "upstream's buckets, a minute to four years")
		return
	}
	t.Fatal("no rotation histogram")
}
