package kubeletapi_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/kubeletapi/kubeletapitest"
)

// listen returns a listener on a free loopback port.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return ln
}

// startServer runs srv until the returned stop is called (deferred after
// goleak.VerifyNone); stop checks that Run returned nil within 5s and may
// be called again.
func startServer(t *testing.T, srv *kubeletapi.Server) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return within 5s of cancel")
		}
	}
	return stop
}

// httpsClient trusts any server certificate and presents certs. Each
// request uses a new connection (a new handshake).
func httpsClient(certs ...tls.Certificate) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true, Certificates: certs}, //nolint:gosec // test server
	}}
}

func TestRunServesTLSAndHealthz(t *testing.T) {
	defer goleak.VerifyNone(t)
	api, healthz := listen(t), listen(t)
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.TLSCertFile, c.TLSKeyFile = "", "" // self-signed
		c.NodeIPs = []net.IP{net.ParseIP("10.0.0.7")}
		c.Listener, c.HealthzListener = api, healthz
	})
	stop := startServer(t, srv)
	defer stop()

	client := httpsClient()
	resp, err := client.Get("https://" + api.Addr().String() + "/healthz")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ok", string(body))
	leaf := resp.TLS.PeerCertificates[0]
	require.Contains(t, leaf.DNSNames, nodeName, "a self-signed certificate for the node")
	require.Len(t, leaf.IPAddresses, 1)
	require.True(t, leaf.IPAddresses[0].Equal(net.ParseIP("10.0.0.7")))

	resp, err = client.Get("https://" + api.Addr().String() + "/pods")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the full API on the TLS port")

	plain := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err = plain.Get("http://" + healthz.Addr().String() + "/healthz")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ok", string(body))
	resp, err = plain.Get("http://" + healthz.Addr().String() + "/pods")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "healthz only on the plain port")

	stop()
	_, err = net.DialTimeout("tcp", api.Addr().String(), time.Second)
	require.Error(t, err, "the listener is closed")
}

func TestRunHealthzDisabled(t *testing.T) {
	defer goleak.VerifyNone(t)
	api := listen(t)
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.Listener, c.HealthzAddr = api, kubeletapi.Disabled
	})
	defer startServer(t, srv)()
	resp, err := httpsClient().Get("https://" + api.Addr().String() + "/healthz/ping")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestRunListenError(t *testing.T) {
	defer goleak.VerifyNone(t)
	busy := listen(t)
	defer busy.Close()
	api := listen(t)
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.Listener, c.HealthzAddr = api, busy.Addr().String()
	})
	err := srv.Run(context.Background())
	require.ErrorContains(t, err, "listen "+busy.Addr().String()+" (healthz)")
	_, err = api.Accept()
	require.Error(t, err, "the given listener is closed")
}

// writeFileAtomic replaces name with data (rename, as kubelet certificate
// rotation and kubeadm do).
func writeFileAtomic(t *testing.T, name string, data []byte) {
	t.Helper()
	tmp := name + ".tmp"
	require.NoError(t, os.WriteFile(tmp, data, 0o600))
	require.NoError(t, os.Rename(tmp, name))
}

func TestRunClientCertificates(t *testing.T) {
	defer goleak.VerifyNone(t)
	ca, err := newCA("client-ca")
	require.NoError(t, err)
	otherCA, err := newCA("other-ca")
	require.NoError(t, err)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(caFile, ca.pem, 0o600))

	authz := &recordingAuthorizer{}
	api := listen(t)
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.Listener, c.HealthzAddr = api, kubeletapi.Disabled
		c.Auth = kubeletapi.AuthConfig{ClientCAFile: caFile}
		c.Authorizer = authz
	})
	defer startServer(t, srv)()
	url := "https://" + api.Addr().String() + "/pods"
	status := func(certs ...tls.Certificate) int {
		t.Helper()
		resp, err := httpsClient(certs...).Get(url)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}

	alice := ca.clientCert(t, "alice", "admins")
	require.Equal(t, http.StatusOK, status(alice))
	attrs := authz.recorded()
	require.NotEmpty(t, attrs)
	u := attrs[0].GetUser()
	require.Equal(t, "alice", u.GetName())
	require.ElementsMatch(t, []string{"admins", "system:authenticated"}, u.GetGroups())
	require.Equal(t, "pods", attrs[0].GetSubresource())

	mallory := otherCA.clientCert(t, "alice", "admins")
	require.Equal(t, http.StatusUnauthorized, status(mallory), "a certificate of another CA")
	require.Equal(t, http.StatusUnauthorized, status(), "no certificate, anonymous off")
	require.Len(t, authz.recorded(), 1, "no authorization without authentication")

	// The client CA file is followed: looked at again, at most once a
	// second, when a certificate is verified.
	writeFileAtomic(t, caFile, otherCA.pem)
	require.Eventually(t, func() bool { return status(mallory) == http.StatusOK }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, http.StatusUnauthorized, status(alice))
}

func TestRunReloadsServingCertificate(t *testing.T) {
	defer goleak.VerifyNone(t)
	ca, err := newCA("serving-ca")
	require.NoError(t, err)
	issue := func(name string) (certPEM, keyPEM []byte) {
		certPEM, keyPEM, err := ca.issue(&x509.Certificate{
			Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		require.NoError(t, err)
		return certPEM, keyPEM
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	certPEM, keyPEM := issue("first.example")
	require.NoError(t, os.WriteFile(certFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))

	api := listen(t)
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.Listener, c.HealthzAddr = api, kubeletapi.Disabled
		c.TLSCertFile, c.TLSKeyFile = certFile, keyFile
	})
	defer startServer(t, srv)()
	served := func() string {
		t.Helper()
		resp, err := httpsClient().Get("https://" + api.Addr().String() + "/healthz")
		require.NoError(t, err)
		resp.Body.Close()
		return resp.TLS.PeerCertificates[0].Subject.CommonName
	}
	require.Equal(t, "first.example", served())

	certPEM, keyPEM = issue("second.example")
	writeFileAtomic(t, keyFile, keyPEM)
	writeFileAtomic(t, certFile, certPEM)
	require.Eventually(t, func() bool { return served() == "second.example" }, 10*time.Second, 20*time.Millisecond)
}

func TestRunClosesHijackedConnections(t *testing.T) {
	defer goleak.VerifyNone(t)
	api := listen(t)
	srv, f := newServer(t, func(c *kubeletapi.Config) {
		c.Listener, c.HealthzAddr = api, kubeletapi.Disabled
	})
	hijacked := make(chan struct{})
	handlerDone := make(chan struct{})
	f.streamer.SetHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		defer close(handlerDone)
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
		_ = brw.Flush()
		close(hijacked)
		_, _ = io.Copy(io.Discard, conn) // until the connection is closed
	}))
	stop := startServer(t, srv)
	defer stop()

	conn, err := tls.Dial("tcp", api.Addr().String(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // test server
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /exec/ns/p/c?command=sh&input=1 HTTP/1.1\r\nHost: node-1\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	<-hijacked

	stop() // returns only once the handler has returned
	select {
	case <-handlerDone:
	default:
		t.Fatal("Run returned before the upgraded handler")
	}
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = br.ReadByte()
	require.Error(t, err)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server closed the connection: %v", err)
}

func TestRunEndsFollowsOnShutdown(t *testing.T) {
	defer goleak.VerifyNone(t)
	api := listen(t)
	srv, f := newServer(t, func(c *kubeletapi.Config) {
		c.Listener, c.HealthzAddr = api, kubeletapi.Disabled
	})
	f.logs.SetLines(podNS, podName, "c", kubeletapitest.Stdout("first")...)
	stop := startServer(t, srv)
	defer stop()

	client := httpsClient()
	resp, err := client.Get("https://" + api.Addr().String() + "/containerLogs/ns/p/c?follow=true")
	require.NoError(t, err)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "first\n", line)
	require.Eventually(t, func() bool { return f.logs.Followers() == 1 }, 5*time.Second, time.Millisecond)

	stop()
	require.Equal(t, 0, f.logs.Followers())
	_, _ = io.ReadAll(r) // the stream ends (cleanly or cut)
}

// TestRunCertificateFilesGone checks that files removed after New (a
// rotation that deletes before it writes) leave the loaded certificates in
// service: the serving certificate and the client CA stay as they were.
func TestRunCertificateFilesGone(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	certFile, keyFile, caFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")
	for src, dst := range map[string]string{servingCertFile: certFile, servingKeyFile: keyFile} {
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst, b, 0o600))
	}
	ca, err := newCA("client-ca")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(caFile, ca.pem, 0o600))
	alice := ca.clientCert(t, "alice")

	api := listen(t)
	clk := clocktesting.NewFakeClock(time.Now())
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.Listener, c.HealthzAddr = api, kubeletapi.Disabled
		c.TLSCertFile, c.TLSKeyFile = certFile, keyFile
		c.Auth = kubeletapi.AuthConfig{ClientCAFile: caFile, AlwaysAllow: true}
		c.Clock = clk
	})
	for _, f := range []string{certFile, keyFile, caFile} {
		require.NoError(t, os.Remove(f))
	}
	defer startServer(t, srv)()
	clk.Step(time.Minute) // the files are looked at again
	resp, err := httpsClient(alice).Get("https://" + api.Addr().String() + "/pods")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "alice still authenticated by the CA loaded first")
	require.NotEmpty(t, resp.TLS.PeerCertificates, "served with the certificate loaded first")
}

// TestRunServeError checks that a listener failing while serving ends Run
// with its error, stopping the other listeners.
func TestRunServeError(t *testing.T) {
	defer goleak.VerifyNone(t)
	api, healthz := listen(t), listen(t)
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.Listener, c.HealthzListener = api, healthz
		c.Auth.ClientCAFile = servingCertFile
	})
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background()) }()
	plain := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := plain.Get("http://" + healthz.Addr().String() + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()

	require.NoError(t, api.Close()) // behind Run's back
	select {
	case err := <-done:
		require.ErrorContains(t, err, "use of closed network connection")
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its listener failed")
	}
	_, err = net.DialTimeout("tcp", healthz.Addr().String(), time.Second)
	require.Error(t, err, "the other listener is closed")
}

// A certificate supplied per handshake (serverTLSBootstrap): while there
// is none the handshake fails and nothing is served; once there is one it
// is served, and a new one takes over at the next handshake.
func TestRunServesTheSuppliedCertificate(t *testing.T) {
	defer goleak.VerifyNone(t)
	api := listen(t)
	var current atomic.Pointer[tls.Certificate]
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.TLSCertFile, c.TLSKeyFile = "", ""
		c.Listener, c.HealthzAddr = api, kubeletapi.Disabled
		c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := current.Load(); c != nil {
				return c, nil
			}
			return nil, errors.New("no serving certificate available for the kubelet")
		}
	})
	stop := startServer(t, srv)
	defer stop()
	client := httpsClient()
	url := "https://" + api.Addr().String() + "/healthz"
	_, err := client.Get(url)
	require.Error(t, err, "no certificate, no handshake")

	pair, err := tls.LoadX509KeyPair(servingCertFile, servingKeyFile)
	require.NoError(t, err)
	current.Store(&pair)
	resp, err := client.Get(url)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, nodeName, resp.TLS.PeerCertificates[0].Subject.CommonName)
	stop()
}

func TestGetCertificateExcludesFiles(t *testing.T) {
	cfg, _ := baseConfig()
	cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, nil }
	_, err := kubeletapi.New(cfg)
	require.ErrorContains(t, err, "GetCertificate and TLSCertFile are exclusive")
}
