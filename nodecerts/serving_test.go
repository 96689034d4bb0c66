package nodecerts_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/nodekit/nodekit/nodecerts"
)

func TestServingTemplateNamesTheNodeAddresses(t *testing.T) {
	addrs := []v1.NodeAddress{}
	s, err := nodecerts.NewServing(nodecerts.ServingConfig{NodeName: "n1", Client: newFakeSigner(t, newTestCA(t)).client,
		CertDir: t.TempDir(), Addresses: func() []v1.NodeAddress { return addrs }})
	require.NoError(t, err)
	assert.Nil(t, s.Template(), "no request without an IP address")
	addrs = []v1.NodeAddress{
		{Type: v1.NodeHostName, Address: "n1"},
		{Type: v1.NodeInternalIP, Address: "10.0.0.2"},
		{Type: v1.NodeExternalIP, Address: "192.0.2.7"},
		{Type: v1.NodeInternalDNS, Address: "n1.internal"},
		{Type: v1.NodeInternalIP, Address: "10.0.0.2"},
		{Type: v1.NodeHostName, Address: "10.0.0.9"},
	}
	tmpl := s.Template()
	require.NotNil(t, tmpl)
	assert.Equal(t, "system:node:n1", tmpl.Subject.CommonName)
	assert.Equal(t, []string{"system:nodes"}, tmpl.Subject.Organization)
	assert.Equal(t, []string{"n1", "n1.internal"}, tmpl.DNSNames)
	assert.Equal(t, []string{"10.0.0.2", "10.0.0.9", "192.0.2.7"}, ipStrings(tmpl.IPAddresses))
}

func ipStrings(ips []net.IP) []string {
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

func TestNewServingRefusesBadConfig(t *testing.T) {
	_, err := nodecerts.NewServing(nodecerts.ServingConfig{NodeName: "n1"})
	require.ErrorIs(t, err, nodecerts.ErrInvalidConfig)
	for _, want := range []string{"Client", "CertDir", "Addresses"} {
		assert.Contains(t, err.Error(), want)
	}
}

// Until its request is approved, the serving certificate does not exist:
// handshakes fail and a Warning event names the request; once approved,
// the certificate names the node's addresses.
func TestServingWaitsForApprovalThenServes(t *testing.T) {
	ca := newTestCA(t)
	signer := newFakeSigner(t, ca)
	approve := make(chan struct{})
	signer.decide = func(*certificatesv1.CertificateSigningRequest) (time.Duration, bool) {
		<-approve
		return time.Hour, false
	}
	recorder := record.NewFakeRecorder(10)
	s, err := nodecerts.NewServing(nodecerts.ServingConfig{NodeName: "n1", Client: signer.client, CertDir: t.TempDir(),
		Addresses: func() []v1.NodeAddress {
			return []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.2"}, {Type: v1.NodeHostName, Address: "n1"}}
		},
		Recorder: recorder, ReportInterval: time.Millisecond})
	require.NoError(t, err)
	_, err = s.GetCertificate(&tls.ClientHelloInfo{})
	require.ErrorIs(t, err, nodecerts.ErrNoServingCertificate)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	select {
	case ev := <-recorder.Events:
		assert.Contains(t, ev, "Warning ServingCertificatePending Waiting for serving certificate signing request csr-1 to be approved")
	case <-time.After(30 * time.Second):
		t.Fatal("no event for the pending request")
	}
	close(approve)
	require.Eventually(t, func() bool { return s.Current() != nil }, 30*time.Second, 10*time.Millisecond)
	cert, err := s.GetCertificate(&tls.ClientHelloInfo{})
	require.NoError(t, err)
	assert.Equal(t, []string{"n1"}, cert.Leaf.DNSNames)
	assert.Equal(t, []string{"10.0.0.2"}, ipStrings(cert.Leaf.IPAddresses))
	assert.Contains(t, cert.Leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
}

// A certificate from an earlier run is served at once.
func TestServingReusesTheStore(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := ca.keyPair(t, dir, "system:node:n1", time.Now().Add(time.Hour))
	s, err := nodecerts.NewServing(nodecerts.ServingConfig{NodeName: "n1", Client: newFakeSigner(t, ca).client,
		CertDir: filepath.Join(dir, "pki"), CertFile: certFile, KeyFile: keyFile,
		Addresses: func() []v1.NodeAddress { return nil }})
	require.NoError(t, err)
	cert, err := s.GetCertificate(nil)
	require.NoError(t, err)
	assert.Equal(t, "system:node:n1", cert.Leaf.Subject.CommonName)
}

// Anyone may create a serving request whose subject is this node's, naming
// the hosts they like. Such a request, newer than the node's own, is never
// named in an event or a log hint (an operator who followed it would give
// the attacker a serving certificate), and an issued one is never served:
// only the request this run made is followed.
func TestServingIgnoresForgedRequests(t *testing.T) {
	ca := newTestCA(t)
	signer := newFakeSigner(t, ca)
	approve := make(chan struct{})
	signer.decide = func(*certificatesv1.CertificateSigningRequest) (time.Duration, bool) {
		<-approve
		return time.Hour, false
	}
	evilIPs := []net.IP{net.ParseIP("203.0.113.66")}
	later := time.Now().Add(time.Minute)
	signer.forge("evil-1", "system:node:n2", "system:node:n1", certificatesv1.KubeletServingSignerName,
		[]string{"evil.example.com"}, evilIPs, later, certificatesv1.CertificateApproved)
	signer.forge("evil-2", "system:node:n2", "system:node:n1", certificatesv1.KubeletServingSignerName,
		[]string{"evil.example.com"}, evilIPs, later.Add(time.Second), "")
	recorder := record.NewFakeRecorder(100)
	s, err := nodecerts.NewServing(nodecerts.ServingConfig{NodeName: "n1", Client: signer.client, CertDir: t.TempDir(),
		Addresses: func() []v1.NodeAddress {
			return []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.2"}, {Type: v1.NodeHostName, Address: "n1"}}
		},
		Recorder: recorder, ReportInterval: time.Millisecond})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	timeout := time.After(30 * time.Second)
	for named := false; !named; {
		select {
		case ev := <-recorder.Events:
			require.NotContains(t, ev, "evil", "an event names a request the node did not make")
			named = strings.Contains(ev, "Waiting for serving certificate signing request csr-1 to be approved (kubectl certificate approve csr-1)")
		case <-timeout:
			t.Fatal("no event for the node's own pending request")
		}
	}
	assert.Nil(t, s.Current(), "the forged request's certificate is not served")
	close(approve)
	require.Eventually(t, func() bool { return s.Current() != nil }, 30*time.Second, 10*time.Millisecond)
	cert := s.Current()
	assert.Equal(t, []string{"n1"}, cert.Leaf.DNSNames)
	assert.Equal(t, []string{"10.0.0.2"}, ipStrings(cert.Leaf.IPAddresses))
	for len(recorder.Events) > 0 {
		assert.NotContains(t, <-recorder.Events, "evil")
	}
}
