package nodecerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

func selfSigned(t *testing.T, cn string) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, _ := x509.ParseCertificate(der)
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// The transport presents whatever certificate is current at each new
// connection, none while there is none, and a kept-alive connection keeps
// its certificate until closeAll ends it.
func TestRotatingTransportPresentsTheCurrentCertificate(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := "anonymous"
		if len(r.TLS.PeerCertificates) > 0 {
			name = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		_, _ = io.WriteString(w, name)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()

	var current atomic.Pointer[tls.Certificate]
	tracker := newConnTracker()
	cfg, _, err := rotatingConfig(&rest.Config{Host: srv.URL, BearerToken: "bootstrap",
		TLSClientConfig: rest.TLSClientConfig{CAData: certPEM(srv.Certificate())}}, current.Load, tracker, nil)
	require.NoError(t, err)
	assert.Empty(t, cfg.BearerToken)
	client, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	get := func() string {
		resp, err := client.Get(srv.URL)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}

	assert.Equal(t, "anonymous", get())
	current.Store(selfSigned(t, "system:node:a"))
	assert.Equal(t, "anonymous", get(), "the open connection keeps its handshake")
	assert.Equal(t, 1, tracker.open())
	tracker.closeAll()
	assert.Equal(t, 0, tracker.open(), "pooled and open connections closed")
	assert.Equal(t, "system:node:a", get(), "a new connection presents the new certificate")
	current.Store(selfSigned(t, "system:node:b"))
	tracker.closeAll()
	assert.Equal(t, "system:node:b", get())
	client.CloseIdleConnections()
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// servingPair is a CA and a server certificate for 127.0.0.1 it signed.
func servingPair(t *testing.T) (caPEM []byte, serving tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2),
		Subject: pkix.Name{CommonName: "apiserver"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	return certPEM(ca), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// With a CA file, the server is verified against the file's current
// content: a rotated cluster CA is followed after reload, and a server
// the CA did not sign is refused.
func TestRotatingTransportFollowsTheCAFile(t *testing.T) {
	ca1, cert1 := servingPair(t)
	ca2, cert2 := servingPair(t)
	var serving atomic.Pointer[tls.Certificate]
	serving.Store(&cert1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	// GetConfigForClient, not GetCertificate: httptest adds its own
	// certificate, which Go serves to a client that sends no SNI (an IP).
	srv.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return &tls.Config{Certificates: []tls.Certificate{*serving.Load()}}, nil
	}}
	srv.StartTLS()
	defer srv.Close()

	caPath := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(caPath, ca1, 0o600))
	ca, err := newCAFile(caPath)
	require.NoError(t, err)
	tracker := newConnTracker()
	cfg, swap, err := rotatingConfig(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: caPath, CAData: ca1}},
		func() *tls.Certificate { return nil }, tracker, ca)
	require.NoError(t, err)
	client, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	defer client.CloseIdleConnections()
	get := func() error {
		resp, err := client.Get(srv.URL)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	require.NoError(t, get())

	// The cluster's CA and serving certificate change.
	serving.Store(&cert2)
	tracker.closeAll()
	require.Error(t, get(), "a server the current CA did not sign is refused")
	require.NoError(t, os.WriteFile(caPath, append(append([]byte{}, ca1...), ca2...), 0o600))
	changed, err := ca.reload()
	require.NoError(t, err)
	require.True(t, changed)
	changed, err = ca.reload()
	require.NoError(t, err)
	require.False(t, changed, "an unchanged file is not a change")
	require.NoError(t, swap())
	require.NoError(t, get(), "the new CA from the file verifies the new certificate")
}
