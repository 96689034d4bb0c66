package nodecerts_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/nodecerts"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const server = "https://127.0.0.1:6443"

func TestNewClientRefusesBadConfig(t *testing.T) {
	for name, cfg := range map[string]nodecerts.ClientConfig{
		"no node":       {Kubeconfig: "k"},
		"no kubeconfig": {NodeName: "n"},
		"no cert dir":   {NodeName: "n", Kubeconfig: "k", BootstrapKubeconfig: "b"},
		"short life":    {NodeName: "n", Kubeconfig: "k", Rotate: true, CertDir: "d", RequestedLifetime: time.Minute},
		"missing file":  {NodeName: "n", Kubeconfig: filepath.Join(t.TempDir(), "absent")},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := nodecerts.NewClient(cfg)
			require.ErrorIs(t, err, nodecerts.ErrInvalidConfig)
		})
	}
}

func TestBootstrapWritesKubeconfigPointingAtTheStore(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	boot := filepath.Join(dir, "bootstrap.kubeconfig")
	writeKubeconfig(t, boot, server, ca.pem, "abcdef.0123456789abcdef", "", "")
	kubeconfig := filepath.Join(dir, "kubeconfig")
	certDir := filepath.Join(dir, "pki")

	c, err := nodecerts.NewClient(nodecerts.ClientConfig{NodeName: "n1", Kubeconfig: kubeconfig,
		BootstrapKubeconfig: boot, CertDir: certDir})
	require.NoError(t, err)
	assert.Nil(t, c.Current(), "no certificate before the request is issued")
	select {
	case <-c.Ready():
		t.Fatal("ready without a certificate")
	default:
	}

	written, err := clientcmd.LoadFromFile(kubeconfig)
	require.NoError(t, err)
	ctx := written.Contexts[written.CurrentContext]
	auth := written.AuthInfos[ctx.AuthInfo]
	pemPath := filepath.Join(certDir, "kubelet-client-current.pem")
	assert.Equal(t, pemPath, auth.ClientCertificate)
	assert.Equal(t, pemPath, auth.ClientKey)
	assert.Empty(t, auth.Token, "the bootstrap token is not copied")
	assert.Equal(t, server, written.Clusters[ctx.Cluster].Server)
	assert.Equal(t, ca.pem, written.Clusters[ctx.Cluster].CertificateAuthorityData)
	st, err := os.Stat(kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	cfg := c.RESTConfig()
	assert.Equal(t, server, cfg.Host)
	assert.Empty(t, cfg.BearerToken, "the node's config has no bootstrap token")
	assert.NotNil(t, cfg.Transport, "a rotating transport")
	_, err = kubernetes.NewForConfig(cfg)
	require.NoError(t, err, "client-go accepts the config")
}

func TestValidKubeconfigIsKeptAndSeedsRotation(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	certFile, keyFile := ca.keyPair(t, dir, "system:node:n1", time.Now().Add(24*time.Hour))
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeKubeconfig(t, kubeconfig, server, ca.pem, "", certFile, keyFile)
	before, _ := os.ReadFile(kubeconfig)
	boot := filepath.Join(dir, "bootstrap.kubeconfig")
	writeKubeconfig(t, boot, server, ca.pem, "tok", "", "")

	c, err := nodecerts.NewClient(nodecerts.ClientConfig{NodeName: "n1", Kubeconfig: kubeconfig,
		BootstrapKubeconfig: boot, CertDir: filepath.Join(dir, "pki"), Rotate: true})
	require.NoError(t, err)
	after, _ := os.ReadFile(kubeconfig)
	assert.Equal(t, string(before), string(after), "a valid kubeconfig is not rewritten")
	require.NotNil(t, c.Current(), "the kubeconfig's certificate is current")
	assert.Equal(t, "system:node:n1", c.Current().Leaf.Subject.CommonName)
}

func TestExpiredKubeconfigBootstrapsAgain(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	certFile, keyFile := ca.keyPair(t, dir, "system:node:n1", time.Now().Add(-time.Minute))
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeKubeconfig(t, kubeconfig, server, ca.pem, "", certFile, keyFile)
	boot := filepath.Join(dir, "bootstrap.kubeconfig")
	writeKubeconfig(t, boot, server, ca.pem, "tok", "", "")

	c, err := nodecerts.NewClient(nodecerts.ClientConfig{NodeName: "n1", Kubeconfig: kubeconfig,
		BootstrapKubeconfig: boot, CertDir: filepath.Join(dir, "pki")})
	require.NoError(t, err)
	assert.Nil(t, c.Current())
	written, err := clientcmd.LoadFromFile(kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "pki", "kubelet-client-current.pem"),
		written.AuthInfos[written.Contexts[written.CurrentContext].AuthInfo].ClientCertificate)
}

// The whole flow against a fake API server whose signer approves: the
// first request goes out with the bootstrap credentials, the certificate
// lands in the store, Ready closes, and a short-lived certificate is
// replaced, this time requested with the node's own identity. The rotation
// schedule is client-go's, on real time: this test waits about two
// seconds.
func TestRunBootstrapsThenRotates(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	boot := filepath.Join(dir, "bootstrap.kubeconfig")
	writeKubeconfig(t, boot, server, ca.pem, "abcdef.0123456789abcdef", "", "")
	signer := newFakeSigner(t, ca)
	// The first certificate lives 5 s: client-go rotates it after 70–90%
	// of that, and a certificate that expired first is bootstrapped again
	// with the token (with 2 s, a loaded CI machine got there).
	lifetimes := []time.Duration{5 * time.Second, time.Hour}
	signer.decide = func(csr *certificatesv1.CertificateSigningRequest) (time.Duration, bool) {
		signer.mu.Lock()
		defer signer.mu.Unlock()
		d := lifetimes[0]
		if len(lifetimes) > 1 {
			lifetimes = lifetimes[1:]
		}
		return d, false
	}
	certDir := filepath.Join(dir, "pki")
	c, err := nodecerts.NewClient(nodecerts.ClientConfig{NodeName: "n1", Kubeconfig: filepath.Join(dir, "kubeconfig"),
		BootstrapKubeconfig: boot, CertDir: certDir, Rotate: true, NewClientset: signer.newClientset})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()

	select {
	case <-c.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("no certificate within 30s")
	}
	first := c.Current()
	require.NotNil(t, first)
	assert.Equal(t, "system:node:n1", first.Leaf.Subject.CommonName)
	assert.Equal(t, []string{"system:nodes"}, first.Leaf.Subject.Organization)
	assert.Contains(t, first.Leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	_, err = os.Stat(filepath.Join(certDir, "kubelet-client-current.pem"))
	require.NoError(t, err, "the certificate is in the store")
	signer.mu.Lock()
	assert.NotEmpty(t, signer.configs[0].BearerToken, "the first request uses the bootstrap token")
	signer.mu.Unlock()

	require.Eventually(t, func() bool {
		cur := c.Current()
		return cur != nil && cur.Leaf.NotAfter.Sub(cur.Leaf.NotBefore) == time.Hour
	}, 30*time.Second, 20*time.Millisecond, "the short-lived certificate is rotated")
	assert.Equal(t, 2, signer.requests())
	signer.mu.Lock()
	last := signer.configs[len(signer.configs)-1]
	signer.mu.Unlock()
	assert.Empty(t, last.BearerToken, "the renewal uses the node's certificate, not the token")
	assert.NotNil(t, last.Transport)
}

func TestRunEndsWhenTheRequestIsDenied(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	boot := filepath.Join(dir, "bootstrap.kubeconfig")
	writeKubeconfig(t, boot, server, ca.pem, "tok", "", "")
	signer := newFakeSigner(t, ca)
	signer.decide = func(*certificatesv1.CertificateSigningRequest) (time.Duration, bool) { return 0, true }
	c, err := nodecerts.NewClient(nodecerts.ClientConfig{NodeName: "n1", Kubeconfig: filepath.Join(dir, "kubeconfig"),
		BootstrapKubeconfig: boot, CertDir: filepath.Join(dir, "pki"), NewClientset: signer.newClientset,
		ReportInterval: time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = c.Run(ctx)
	require.ErrorIs(t, err, nodecerts.ErrDenied)
	assert.Contains(t, err.Error(), "csr-1 was denied (Nope: not this node)")
}

// Without a certificate and without a server that answers, Run gives up
// after ExitAfter (on the injected clock), so that a restart bootstraps
// again.
func TestRunGivesUpWithoutCertificateOrServer(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	boot := filepath.Join(dir, "bootstrap.kubeconfig")
	writeKubeconfig(t, boot, server, ca.pem, "tok", "", "")
	clk := clocktesting.NewFakeClock(time.Now())
	c, err := nodecerts.NewClient(nodecerts.ClientConfig{NodeName: "n1", Kubeconfig: filepath.Join(dir, "kubeconfig"),
		BootstrapKubeconfig: boot, CertDir: filepath.Join(dir, "pki"), Clock: clk, ExitAfter: time.Minute,
		NewClientset: func(*rest.Config) (kubernetes.Interface, error) { return nil, errors.New("no server") }})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background()) }()
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond, "Run waits on its ticker")
	clk.Step(2 * time.Minute)
	select {
	case err := <-done:
		require.ErrorIs(t, err, nodecerts.ErrNoCertificate)
		assert.True(t, strings.Contains(err.Error(), "1m0s"), err.Error())
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not give up")
	}
}

func TestStaticKubeconfigNeedsNoRun(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	certFile, keyFile := ca.keyPair(t, dir, "system:node:n1", time.Now().Add(time.Hour))
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeKubeconfig(t, kubeconfig, server, ca.pem, "", certFile, keyFile)
	c, err := nodecerts.NewClient(nodecerts.ClientConfig{NodeName: "n1", Kubeconfig: kubeconfig})
	require.NoError(t, err)
	<-c.Ready()
	cfg := c.RESTConfig()
	assert.Nil(t, cfg.Transport, "the kubeconfig is used as it is")
	assert.NotEmpty(t, cfg.CertData)
	assert.Nil(t, c.Current())
}

// Anyone may create a client request whose subject is this node's (a
// bootstrap token holder, another node). One that an operator denied does
// not end Run, and is never named: only the request this run made is
// followed, and it still loads once approved.
func TestRunIgnoresForgedDeniedClientRequest(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	boot := filepath.Join(dir, "bootstrap.kubeconfig")
	writeKubeconfig(t, boot, server, ca.pem, "abcdef.0123456789abcdef", "", "")
	signer := newFakeSigner(t, ca)
	approve := make(chan struct{})
	signer.decide = func(*certificatesv1.CertificateSigningRequest) (time.Duration, bool) {
		<-approve
		return time.Hour, false
	}
	// Newer than this run's request, for this node's name, denied.
	for i, user := range []string{"system:bootstrap:evil01", "system:node:n2"} {
		signer.forge(fmt.Sprintf("evil-%d", i+1), user, "system:node:n1", certificatesv1.KubeAPIServerClientKubeletSignerName,
			nil, nil, time.Now().Add(time.Minute), certificatesv1.CertificateDenied)
	}
	c, err := nodecerts.NewClient(nodecerts.ClientConfig{NodeName: "n1", Kubeconfig: filepath.Join(dir, "kubeconfig"),
		BootstrapKubeconfig: boot, CertDir: filepath.Join(dir, "pki"), NewClientset: signer.newClientset,
		ReportInterval: time.Millisecond})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	// Run reads this run's request (csr-1) while it waits for approval.
	readOwn := func() bool {
		for _, a := range signer.client.Actions() {
			if g, ok := a.(k8stesting.GetAction); ok && a.GetResource().Resource == "certificatesigningrequests" && g.GetName() == "csr-1" {
				return true
			}
		}
		return false
	}
	deadline := time.After(30 * time.Second)
	for !readOwn() {
		select {
		case err := <-done:
			t.Fatalf("Run ended before its own request was decided: %v", err)
		case <-deadline:
			t.Fatal("Run did not read its own request within 30s")
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(approve)
	select {
	case <-c.Ready():
	case err := <-done:
		t.Fatalf("Run ended before its own request was issued: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no certificate within 30s")
	}
	assert.Equal(t, "system:node:n1", c.Current().Leaf.Subject.CommonName)
	cancel()
	require.NoError(t, <-done)
	assert.Equal(t, 1, signer.requests())
}
