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
// or the current content of the certificate files, parsed once per change.
type servingCert struct {
	files *dynamiccertificates.DynamicCertKeyPairContent // nil: self-signed

	mu        sync.Mutex
	cert, key []byte
	parsed    *tls.Certificate
}

func newServingCert(cfg *Config) (*servingCert, error) {
	s := &servingCert{}
	if cfg.TLSCertFile != "" {
		files, err := dynamiccertificates.NewDynamicServingContentFromFiles("serving-cert", cfg.TLSCertFile, cfg.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: serving certificate: %w", ErrInvalidConfig, err)
		}
		s.files = files
		if _, err := s.current(); err != nil {
			return nil, fmt.Errorf("%w: serving certificate: %w", ErrInvalidConfig, err)
		}
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
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("kubeletapi: self-signed certificate: %w", err)
	}
	s.parsed = &pair
	return s, nil
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
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return s.current()
		},
	}
}
