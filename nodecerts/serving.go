package nodecerts

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/certificate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ErrNoServingCertificate is what GetCertificate returns while the node
// has no serving certificate: the TLS handshake fails and the kubelet API
// serves nothing.
var ErrNoServingCertificate = errors.New("no serving certificate available for the kubelet")

// ServingConfig configures the kubelet API's serving certificate from
// kubernetes.io/kubelet-serving certificate signing requests
// (serverTLSBootstrap, --rotate-server-certificates).
type ServingConfig struct {
	// NodeName is the node the certificate is for (subject
	// system:node:NodeName, group system:nodes). Required.
	NodeName string
	// Client is the node's API client (its own identity signs the
	// request). Required.
	Client kubernetes.Interface
	// CertDir holds the store (kubelet-server-current.pem and its dated
	// predecessors). Required.
	CertDir string
	// Addresses returns the node's current addresses: the hostnames and IPs
	// the certificate names. No request is made until it returns an IP
	// address; a change of addresses requests a new certificate. Required.
	Addresses func() []v1.NodeAddress
	// CertFile and KeyFile, if set, are a pair served until the first
	// signed certificate (--tls-cert-file, --tls-private-key-file).
	CertFile, KeyFile string
	// RequestedLifetime, if set, is asked for in each request (at least
	// 10 minutes). Zero leaves it to the signer.
	RequestedLifetime time.Duration
	// Recorder, if set, receives a Warning event on the Node while a
	// request waits for approval or was denied.
	Recorder record.EventRecorder
	// ReportInterval is how often a pending request is reported. Default
	// DefaultReportInterval.
	ReportInterval time.Duration
	// Registerer, if set, receives the kubelet's
	// kubelet_certificate_manager_server_ttl_seconds gauge,
	// kubelet_server_expiration_renew_errors counter and
	// kubelet_certificate_manager_server_rotation_seconds histogram; a
	// registry that has them already is refused by NewServing.
	Registerer prometheus.Registerer
	// Clock drives Run's checks; default the real clock.
	Clock clock.WithTicker
}

// Serving holds the kubelet API's serving certificate, requested and
// rotated through the API server.
type Serving struct {
	cfg     ServingConfig
	store   certificate.Store
	initial *tls.Certificate
	mgr     atomic.Pointer[certificate.Manager]
	started atomic.Bool
	metrics certMetrics
}

// NewServing validates cfg and opens the certificate store (a certificate
// already there from an earlier run is served at once). It does not
// contact the API server.
func NewServing(cfg ServingConfig) (*Serving, error) {
	var errs []error
	if cfg.NodeName == "" {
		errs = append(errs, errors.New("NodeName is required"))
	}
	if cfg.Client == nil {
		errs = append(errs, errors.New("Client is required"))
	}
	if cfg.CertDir == "" {
		errs = append(errs, errors.New("CertDir is required"))
	}
	if cfg.Addresses == nil {
		//lint:ignore ST1005 the field's name
		errs = append(errs, errors.New("Addresses is required"))
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		errs = append(errs, errors.New("CertFile and KeyFile must be given together"))
	}
	if cfg.RequestedLifetime != 0 && cfg.RequestedLifetime < 10*time.Minute {
		errs = append(errs, fmt.Errorf("RequestedLifetime %v is below the API's minimum of 10m", cfg.RequestedLifetime))
	}
	if cfg.ReportInterval < 0 {
		errs = append(errs, errors.New("ReportInterval must not be negative"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	if cfg.ReportInterval == 0 {
		cfg.ReportInterval = DefaultReportInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if err := os.MkdirAll(cfg.CertDir, 0o700); err != nil {
		return nil, fmt.Errorf("nodecerts: cert dir: %w", err)
	}
	store, err := certificate.NewFileStore("kubelet-server", cfg.CertDir, cfg.CertDir, cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("nodecerts: serving certificate store: %w", err)
	}
	s := &Serving{cfg: cfg, store: store}
	if cur, err := store.Current(); err == nil && cur.Leaf != nil && cfg.Clock.Now().Before(cur.Leaf.NotAfter) {
		s.initial = cur
	}
	if cfg.Registerer != nil {
		if s.metrics, err = servingMetrics(cfg.Registerer, s.Current, cfg.Clock); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Current returns the serving certificate, nil while there is none.
func (s *Serving) Current() *tls.Certificate {
	if m := s.mgr.Load(); m != nil {
		return (*m).Current()
	}
	return s.initial
}

// GetCertificate is a tls.Config.GetCertificate: the current certificate,
// or ErrNoServingCertificate.
func (s *Serving) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.Current(); c != nil {
		return c, nil
	}
	return nil, ErrNoServingCertificate
}

// Template returns the certificate request for the node's current
// addresses, nil while it has no IP address: hostnames and DNS names as
// DNS names, IPs (and hostnames that are IPs) as IP addresses, each once,
// sorted, as the kubelet builds it.
func (s *Serving) Template() *x509.CertificateRequest {
	var dns []string
	var ips []net.IP
	for _, a := range s.cfg.Addresses() {
		if a.Address == "" {
			continue
		}
		ip := net.ParseIP(a.Address)
		switch a.Type {
		case v1.NodeHostName:
			if ip == nil {
				dns = append(dns, a.Address)
				continue
			}
			ips = append(ips, ip)
		case v1.NodeInternalIP, v1.NodeExternalIP:
			if ip != nil {
				ips = append(ips, ip)
			}
		case v1.NodeInternalDNS, v1.NodeExternalDNS:
			dns = append(dns, a.Address)
		}
	}
	if len(ips) == 0 {
		return nil
	}
	slices.Sort(dns)
	dns = slices.Compact(dns)
	slices.SortFunc(ips, func(a, b net.IP) int { return strings.Compare(a.String(), b.String()) })
	ips = slices.CompactFunc(ips, func(a, b net.IP) bool { return a.Equal(b) })
	return &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: nodeUser(s.cfg.NodeName), Organization: []string{"system:nodes"}},
		DNSNames:    dns,
		IPAddresses: ips,
	}
}

// Run requests and rotates the serving certificate until ctx is done
// (client-go's certificate manager: a request at once when there is no
// certificate or the addresses changed, then at 70-90% of each
// certificate's lifetime), and reports a request waiting for approval, or
// denied, by name every ReportInterval. Run may be called once.
func (s *Serving) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("nodecerts: Serving.Run called twice")
	}
	logger := klog.FromContext(ctx)
	// The requests the manager creates are remembered, and only they are
	// reported: made with the node's own client, they must be recorded
	// as made by the node.
	own := &ownRequests{}
	client := own.recording(s.cfg.Client, nodeUser(s.cfg.NodeName))
	mgr, err := certificate.NewManager(&certificate.Config{
		Ctx:                          &ctx,
		ClientsetFn:                  func(*tls.Certificate) (kubernetes.Interface, error) { return client, nil },
		GetTemplate:                  s.Template,
		SignerName:                   certificatesv1.KubeletServingSignerName,
		GetUsages:                    certificate.DefaultKubeletServingGetUsages,
		RequestedCertificateLifetime: lifetime(s.cfg.RequestedLifetime),
		CertificateStore:             s.store,
		CertificateRotation:          s.metrics.rotation,
		CertificateRenewFailure:      s.metrics.renewErrors,
		Name:                         "server",
	})
	if err != nil {
		return fmt.Errorf("nodecerts: serving certificate manager: %w", err)
	}
	s.mgr.Store(&mgr)
	mgr.Start()
	defer mgr.Stop()
	clk := s.cfg.Clock
	ticker := clk.NewTicker(checkInterval)
	defer ticker.Stop()
	var last *tls.Certificate
	var lastReport time.Time
	var lastMsg string
	named := false
	for {
		now := clk.Now()
		if cur := mgr.Current(); cur != last {
			if cur != nil {
				logger.Info("Serving certificate loaded", "expires", cur.Leaf.NotAfter.UTC(),
					"dnsNames", cur.Leaf.DNSNames, "ips", cur.Leaf.IPAddresses)
			}
			last = cur
		}
		// Until a request can be named, look every check; then every
		// ReportInterval. Say it when it changes or the interval passed.
		if due := now.Sub(lastReport) >= s.cfg.ReportInterval; last == nil && (due || !named) {
			msg, csr, warn := s.report(ctx, own)
			named = csr != ""
			if due || msg != lastMsg {
				lastReport, lastMsg = now, msg
				s.say(ctx, msg, csr, warn)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// report says why there is no serving certificate yet: the message, the
// request it names ("" if none) and whether it is worth an event. Only the
// newest request this run made is named: a request of anyone else,
// whatever its subject and names, is not looked at.
func (s *Serving) report(ctx context.Context, own *ownRequests) (msg, csr string, warn bool) {
	if s.Template() == nil {
		return "Waiting for the node's IP address before requesting a serving certificate", "", false
	}
	st, err := ownCSR(ctx, s.cfg.Client, own)
	switch {
	case err != nil:
		return "Waiting for a serving certificate; cannot read the certificate signing request: " + err.Error(), "", false
	case st.notOurs != "":
		return fmt.Sprintf("Waiting for a serving certificate; the certificate signing request %s this node made cannot be followed (%s); the certificate manager makes another when it gives up on it", st.name, st.notOurs), st.name, false
	case st.denied != "":
		return fmt.Sprintf("Serving certificate signing request %s was %s; the kubelet API serves nothing until one is approved", st.name, st.denied), st.name, true
	case st.name != "" && !st.issued:
		return fmt.Sprintf("Waiting for serving certificate signing request %s to be approved (kubectl certificate approve %s); the kubelet API serves nothing until then", st.name, st.name), st.name, true
	case st.name != "":
		return "The serving certificate was issued; loading it", st.name, false
	}
	return "Waiting for a serving certificate; no certificate signing request made yet", "", false
}

// say logs msg, and records it as a Warning event on the Node when warn.
func (s *Serving) say(ctx context.Context, msg, csr string, warn bool) {
	klog.FromContext(ctx).Info(msg, "csr", csr)
	if warn && s.cfg.Recorder != nil {
		ref := &v1.ObjectReference{Kind: "Node", Name: s.cfg.NodeName, UID: types.UID(s.cfg.NodeName)}
		s.cfg.Recorder.Event(ref, v1.EventTypeWarning, "ServingCertificatePending", msg)
	}
}
