package kubeletapi

import (
	"crypto/tls"
	"fmt"
	"sync"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// servingCert hands out the serving certificate: the host's
// (Config.GetCertificate), the certificate files' content, re-read when
// they change, or a fixed self-signed one.
type servingCert struct {
	get   func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	files *reloadingFiles // nil: self-signed

	mu     sync.Mutex
	parsed *tls.Certificate
}

func newServingCert(cfg *Config) (*servingCert, error) {
	if cfg.GetCertificate != nil {
		return &servingCert{get: cfg.GetCertificate}, nil
	}
	s := &servingCert{}
	if cfg.TLSCertFile != "" {
		files, err := newReloadingFiles(cfg.Clock, s.load, cfg.TLSCertFile, cfg.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: serving certificate: %w", ErrInvalidConfig, err)
		}
		s.files = files
		return s, nil
	}
	host := cfg.NodeName
	if host == "" {
		host = "localhost"
	}
	cert, key, err := certutil.GenerateSelfSignedCertKey(host, cfg.NodeIPs, nil)
	if err != nil {
		return nil, fmt.Errorf("kubeletapi: self-signed certificate: %w", err)
	}
	if err := s.load([][]byte{cert, key}); err != nil {
		return nil, fmt.Errorf("kubeletapi: self-signed certificate: %w", err)
	}
	return s, nil
}

// load parses a certificate and its key.
func (s *servingCert) load(contents [][]byte) error {
	pair, err := tls.X509KeyPair(contents[0], contents[1])
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.parsed = &pair
	return nil
}

// current returns the certificate to serve, after a look at the files: a
// pair that does not load (say, a certificate written before its key)
// leaves the previous one in service.
func (s *servingCert) current(hello *tls.ClientHelloInfo) *tls.Certificate {
	if s.files != nil {
		if err := s.files.check(); err != nil {
			klog.FromContext(hello.Context()).Error(err, "Serving certificate files not reloaded; the previous certificate stays in use")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.parsed
}

// tlsConfig asks for (but does not require) a client certificate: the x509
// authenticator verifies it against the client CA, and a request without
// one may still carry a bearer token.
func (s *servingCert) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ClientAuth: tls.RequestClientCert,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if s.get != nil {
				return s.get(hello)
			}
			return s.current(hello), nil
		},
	}
}
