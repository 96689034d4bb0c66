package kubeletapi

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"sync"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	certutil "k8s.io/client-go/util/cert"
)

// servingCert hands out the serving certificate: a fixed self-signed one,
// or the certificate files' content, parsed once per change. The files are
// loaded once by New and followed only while Run runs (watch): the staging
// file watcher runs goroutines from its creation, which a Server that is
// never run (Handler only) must not leave behind.
type servingCert struct {
	certFile, keyFile string // empty: self-signed
	get               func(*tls.ClientHelloInfo) (*tls.Certificate, error)

	mu        sync.Mutex
	files     *dynamiccertificates.DynamicCertKeyPairContent // set by watch
	cert, key []byte
	parsed    *tls.Certificate
}

func newServingCert(cfg *Config) (*servingCert, error) {
	if cfg.GetCertificate != nil {
		return &servingCert{get: cfg.GetCertificate}, nil
	}
	if cfg.TLSCertFile != "" {
		pair, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: serving certificate: %w", ErrInvalidConfig, err)
		}
		return &servingCert{certFile: cfg.TLSCertFile, keyFile: cfg.TLSKeyFile, parsed: &pair}, nil
	}
	s := &servingCert{}
	host := cfg.NodeName
	if host == "" {
		host = "localhost"
	}
	cert, key, err := certutil.GenerateSelfSignedCertKey(host, cfg.NodeIPs, nil)
	if err != nil {
		return nil, fmt.Errorf("kubeletapi: self-signed certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("kubeletapi: self-signed certificate: %w", err)
	}
	s.parsed = &pair
	return s, nil
}

// watch starts following the certificate files: the returned content must
// be run until Run ends. nil without files.
func (s *servingCert) watch() (*dynamiccertificates.DynamicCertKeyPairContent, error) {
	if s.certFile == "" {
		return nil, nil
	}
	// Checked first: the staging constructor leaks its queue's goroutine
	// when it fails.
	if _, err := tls.LoadX509KeyPair(s.certFile, s.keyFile); err != nil {
		return nil, fmt.Errorf("kubeletapi: serving certificate: %w", err)
	}
	files, err := dynamiccertificates.NewDynamicServingContentFromFiles("serving-cert", s.certFile, s.keyFile)
	if err != nil {
		return nil, fmt.Errorf("kubeletapi: serving certificate: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files = files
	return files, nil
}

// current returns the certificate to serve.
func (s *servingCert) current() (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		return s.parsed, nil
	}
	cert, key := s.files.CurrentCertKeyContent()
	if s.parsed != nil && bytes.Equal(cert, s.cert) && bytes.Equal(key, s.key) {
		return s.parsed, nil
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, err
	}
	s.cert, s.key, s.parsed = cert, key, &pair
	return s.parsed, nil
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
			return s.current()
		},
	}
}
