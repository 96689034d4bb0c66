package nodecerts

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// connTracker dials the API server and remembers every open connection, so
// that a new client certificate can end the connections that still present
// the old one (or none): HTTP/2 keeps one connection for everything, and a
// TLS session never picks up a new certificate by itself.
type connTracker struct {
	dialer *net.Dialer
	// idle drops the transport's pooled connections (set once the
	// transport exists), so that no request picks one being closed.
	idle  func()
	mu    sync.Mutex
	conns map[*trackedConn]struct{}
}

func newConnTracker() *connTracker {
	return &connTracker{
		dialer: &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		conns:  map[*trackedConn]struct{}{},
	}
}

func (t *connTracker) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := t.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, tracker: t}
	t.mu.Lock()
	t.conns[tc] = struct{}{}
	t.mu.Unlock()
	return tc, nil
}

// closeAll closes every connection dialled so far; the next request dials
// anew and presents the current certificate.
func (t *connTracker) closeAll() int {
	if t.idle != nil {
		t.idle()
	}
	t.mu.Lock()
	conns := t.conns
	t.conns = map[*trackedConn]struct{}{}
	t.mu.Unlock()
	for c := range conns {
		_ = c.Conn.Close()
	}
	return len(conns)
}

func (t *connTracker) open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}

type trackedConn struct {
	net.Conn
	tracker *connTracker
	once    sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.tracker.mu.Lock()
		delete(c.tracker.conns, c)
		c.tracker.mu.Unlock()
	})
	return c.Conn.Close()
}

// caFile follows a CA bundle file (a kubeconfig's certificate-authority):
// reload reads it again and says whether it changed, so that the node
// follows a rotated cluster CA.
type caFile struct {
	path string
	mu   sync.Mutex
	data []byte
}

func newCAFile(path string) (*caFile, error) {
	c := &caFile{path: path}
	if _, err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// reload reads the file and reports whether its content changed. A file
// that holds no certificate keeps the last content.
func (c *caFile) reload() (bool, error) {
	data, err := os.ReadFile(c.path)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.data != nil && bytes.Equal(data, c.data) {
		return false, nil
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		return false, fmt.Errorf("CA file %s holds no certificate", c.path)
	}
	c.data = data
	return true, nil
}

// current is the CA bundle as last read.
func (c *caFile) current() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.data
}

// rotatingConfig returns a copy of base (server, CA, server name) whose
// requests authenticate with whatever certificate current returns at each
// handshake, over connections the tracker can close. base's own
// credentials are dropped. With ca (base names a CA file), the returned
// swap rebuilds the transport with the file's current CA: the standard
// verification takes a fixed pool.
func rotatingConfig(base *rest.Config, current func() *tls.Certificate, tracker *connTracker, ca *caFile) (*rest.Config, func() error, error) {
	build := func() (*http.Transport, error) {
		tlsBase := rest.TLSClientConfig{Insecure: base.Insecure, ServerName: base.ServerName, CAData: base.CAData, CAFile: base.CAFile}
		if ca != nil {
			tlsBase.CAFile, tlsBase.CAData = "", ca.current()
		}
		tlsConfig, err := rest.TLSConfigFor(&rest.Config{Host: base.Host, TLSClientConfig: tlsBase})
		if err != nil {
			return nil, err
		}
		if tlsConfig == nil {
			tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if c := current(); c != nil {
				return c, nil
			}
			// No certificate yet: the handshake goes on without one, and
			// the API server sees an anonymous request.
			return &tls.Certificate{}, nil
		}
		return utilnet.SetTransportDefaults(&http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			TLSHandshakeTimeout: 10 * time.Second,
			TLSClientConfig:     tlsConfig,
			MaxIdleConnsPerHost: 25,
			DialContext:         tracker.DialContext,
		}), nil
	}
	t, err := build()
	if err != nil {
		return nil, nil, err
	}
	st := &swapTransport{}
	st.rt.Store(t)
	tracker.idle = st.CloseIdleConnections
	swap := func() error {
		next, err := build()
		if err != nil {
			return err
		}
		old := st.rt.Swap(next)
		old.CloseIdleConnections()
		tracker.closeAll()
		return nil
	}
	cfg := rest.AnonymousClientConfig(base)
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	cfg.Transport = st
	return cfg, swap, nil
}

// swapTransport sends each request through the current transport.
type swapTransport struct {
	rt atomic.Pointer[http.Transport]
}

func (s *swapTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return s.rt.Load().RoundTrip(req)
}

// CloseIdleConnections closes the current transport's idle connections
// (client-go calls it on a failed heartbeat).
func (s *swapTransport) CloseIdleConnections() { s.rt.Load().CloseIdleConnections() }
