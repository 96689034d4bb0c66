package nodecerts

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Defaults of ClientConfig and ServingConfig.
const (
	// DefaultExitAfter is how long Client.Run goes on without a valid
	// client certificate and without reaching the API server before it
	// gives up (the kubelet's five minutes).
	DefaultExitAfter = 5 * time.Minute
	// DefaultReportInterval is how often a pending certificate signing
	// request is reported.
	DefaultReportInterval = 30 * time.Second

	// checkInterval is how often Run looks for a new certificate.
	checkInterval = time.Second
	// caCheckInterval is how often Run re-reads a CA file.
	caCheckInterval = 10 * time.Second
)

// ErrInvalidConfig wraps every error NewClient and NewServing return for a
// bad configuration.
var ErrInvalidConfig = errors.New("nodecerts: invalid config")

// ErrNoCertificate is wrapped by the error Client.Run returns when the node
// has been without a valid client certificate, and without a working
// connection to the API server, for ExitAfter: a restart bootstraps again.
var ErrNoCertificate = errors.New("nodecerts: no valid client certificate")

// ErrDenied is wrapped by the error Client.Run returns when the API server
// denied this run's client certificate signing request.
var ErrDenied = errors.New("nodecerts: certificate signing request denied")

// ClientConfig configures a node's client credentials. Zero fields are the
// kubelet's defaults where it has one.
type ClientConfig struct {
	// NodeName is the node whose identity (system:node:NodeName in group
	// system:nodes) the certificates carry. Required.
	NodeName string
	// Kubeconfig is the node's kubeconfig (--kubeconfig). Required. With
	// BootstrapKubeconfig, it is written by NewClient when it is missing,
	// does not parse or its certificate has expired: the bootstrap
	// kubeconfig's server and CA, and the client certificate and key in
	// CertDir.
	Kubeconfig string
	// BootstrapKubeconfig (--bootstrap-kubeconfig), if set, holds the
	// credentials (typically a bootstrap token) that request the node's
	// first client certificate, and any later one while the node has no
	// valid certificate.
	BootstrapKubeconfig string
	// CertDir holds the certificate store (kubelet-client-current.pem and
	// its dated predecessors), as the kubelet's --cert-dir. Required when
	// Rotate or BootstrapKubeconfig is set.
	CertDir string
	// Rotate requests a new client certificate before the current one
	// expires (--rotate-certificates): at 70-90% of its lifetime, as
	// client-go's certificate manager schedules it. Without it, the
	// certificate from the kubeconfig or from bootstrapping is kept until it
	// expires.
	Rotate bool
	// RequestedLifetime, if set, is asked for in each request
	// (spec.expirationSeconds, at least 10 minutes); the signer may grant
	// less. Zero leaves it to the signer, as the kubelet does.
	RequestedLifetime time.Duration
	// ExitAfter bounds how long Run goes on with neither a valid
	// certificate nor a healthy connection to the API server; then it
	// returns an error wrapping ErrNoCertificate. Default DefaultExitAfter.
	ExitAfter time.Duration
	// ReportInterval is how often a pending request is logged with its
	// name. Default DefaultReportInterval.
	ReportInterval time.Duration
	// NewClientset builds the clientset that requests certificates; tests
	// may replace it. Default kubernetes.NewForConfig.
	NewClientset func(*rest.Config) (kubernetes.Interface, error)
	// Registerer, if set, receives the kubelet's
	// kubelet_certificate_manager_client_ttl_seconds gauge and
	// kubelet_certificate_manager_client_expiration_renew_errors counter
	// when the Client rotates or bootstraps (as the kubelet, which has
	// them only with rotation); a registry that has them already is
	// refused by NewClient.
	Registerer prometheus.Registerer
	// Clock drives Run's checks; default the real clock. The rotation
	// schedule itself is client-go's certificate manager's, on real time.
	Clock clock.WithTicker
}

// Client holds a node's client credentials: the rest.Config every API
// client of the node is built from, presenting the current certificate.
type Client struct {
	cfg ClientConfig
	// certConfig requests certificates while there is no valid one
	// (the bootstrap credentials, or the kubeconfig's own).
	certConfig *rest.Config
	// userConfig is the node's API configuration, before the rotating
	// transport.
	userConfig                    *rest.Config
	rest                          *rest.Config
	store                         certificate.Store
	initial                       *tls.Certificate
	bootstrapPEM, bootstrapKeyPEM []byte
	conns                         *connTracker
	ca                            *caFile // the kubeconfig's CA file, followed; nil for CA data
	swapCA                        func() error
	mgr                           atomic.Pointer[certificate.Manager]
	ready                         chan struct{}
	readyOnce                     sync.Once
	started                       atomic.Bool
	metrics                       certMetrics
}

// NewClient validates cfg and loads the node's credentials as the kubelet
// does at start-up: the kubeconfig if its certificate is still valid,
// otherwise (with BootstrapKubeconfig) the bootstrap credentials, writing a
// kubeconfig that points at CertDir. It does not contact the API server.
func NewClient(cfg ClientConfig) (*Client, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, conns: newConnTracker(), ready: make(chan struct{})}
	managed := cfg.Rotate || cfg.BootstrapKubeconfig != ""
	if !managed {
		kc, err := loadKubeconfig(cfg.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("%w: kubeconfig: %w", ErrInvalidConfig, err)
		}
		c.rest = kc
		close(c.ready)
		return c, nil
	}
	if err := os.MkdirAll(cfg.CertDir, 0o700); err != nil {
		return nil, fmt.Errorf("nodecerts: cert dir: %w", err)
	}
	store, err := certificate.NewFileStore("kubelet-client", cfg.CertDir, cfg.CertDir, "", "")
	if err != nil {
		return nil, fmt.Errorf("nodecerts: certificate store: %w", err)
	}
	c.store = store
	if err := c.loadConfigs(); err != nil {
		return nil, err
	}
	if cur, err := store.Current(); err == nil && cur.Leaf != nil && cfg.Clock.Now().Before(cur.Leaf.NotAfter) {
		c.initial = cur
	} else if len(c.bootstrapPEM) > 0 {
		if pair, err := tls.X509KeyPair(c.bootstrapPEM, c.bootstrapKeyPEM); err == nil {
			if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err == nil && cfg.Clock.Now().Before(pair.Leaf.NotAfter) {
				c.initial = &pair
			}
		}
	}
	if c.userConfig.CAFile != "" && !c.userConfig.Insecure {
		if c.ca, err = newCAFile(c.userConfig.CAFile); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	c.rest, c.swapCA, err = rotatingConfig(c.userConfig, c.Current, c.conns, c.ca)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if cfg.Registerer != nil {
		if c.metrics, err = clientMetrics(cfg.Registerer, c.Current, cfg.Clock); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// loadConfigs picks the credentials as the kubelet's LoadClientConfig: a
// kubeconfig with a valid certificate is used as it is (and its
// certificate seeds the store); otherwise the bootstrap kubeconfig requests
// one and the kubeconfig is rewritten to point at the store.
func (c *Client) loadConfigs() error {
	logger := klog.Background()
	if c.cfg.BootstrapKubeconfig != "" {
		ok, why, err := kubeconfigValid(c.cfg.Kubeconfig, c.cfg.Clock.Now())
		if err != nil {
			return err
		}
		if !ok {
			boot, err := loadKubeconfig(c.cfg.BootstrapKubeconfig)
			if err != nil {
				return fmt.Errorf("%w: bootstrap kubeconfig: %w", ErrInvalidConfig, err)
			}
			user := rest.AnonymousClientConfig(boot)
			pem := filepath.Join(c.cfg.CertDir, "kubelet-client-current.pem") // the store's current pair
			if err := writeKubeconfig(c.cfg.Kubeconfig, boot, pem); err != nil {
				return err
			}
			logger.Info("Bootstrapping the node's client certificate", "kubeconfig", c.cfg.Kubeconfig, "reason", why,
				"bootstrapKubeconfig", c.cfg.BootstrapKubeconfig, "certDir", c.cfg.CertDir)
			c.certConfig, c.userConfig = boot, user
			return nil
		}
	}
	kc, err := loadKubeconfig(c.cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("%w: kubeconfig: %w", ErrInvalidConfig, err)
	}
	c.certConfig, c.userConfig = kc, rest.CopyConfig(kc)
	// A kubeconfig that carries its own certificate seeds the store, so
	// that rotation starts from it (kubeadm hands the kubelet one).
	c.bootstrapPEM, c.bootstrapKeyPEM = kc.CertData, kc.KeyData
	return nil
}

func (c *ClientConfig) defaults() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("NodeName is required"))
	}
	if c.Kubeconfig == "" {
		//lint:ignore ST1005 the field's name
		errs = append(errs, errors.New("Kubeconfig is required"))
	}
	if (c.Rotate || c.BootstrapKubeconfig != "") && c.CertDir == "" {
		errs = append(errs, errors.New("CertDir is required to rotate or bootstrap certificates"))
	}
	if c.RequestedLifetime != 0 && c.RequestedLifetime < 10*time.Minute {
		errs = append(errs, fmt.Errorf("RequestedLifetime %v is below the API's minimum of 10m", c.RequestedLifetime))
	}
	if c.ExitAfter < 0 || c.ReportInterval < 0 {
		errs = append(errs, errors.New("ExitAfter and ReportInterval must not be negative"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	if c.ExitAfter == 0 {
		c.ExitAfter = DefaultExitAfter
	}
	if c.ReportInterval == 0 {
		c.ReportInterval = DefaultReportInterval
	}
	if c.NewClientset == nil {
		c.NewClientset = func(cfg *rest.Config) (kubernetes.Interface, error) { return kubernetes.NewForConfig(cfg) }
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return nil
}

// RESTConfig returns the configuration every API client of the node is
// built from. With rotation or bootstrapping, its transport presents the
// current certificate at each new connection (none while there is none),
// and Run closes the open connections when the certificate changes; copies
// share that transport.
func (c *Client) RESTConfig() *rest.Config { return rest.CopyConfig(c.rest) }

// Current returns the node's current client certificate, nil while it has
// none (waiting for approval) or it has expired, and nil for a Client
// that neither rotates nor bootstraps (its kubeconfig's credentials are
// used as they are).
func (c *Client) Current() *tls.Certificate {
	if m := c.mgr.Load(); m != nil {
		return (*m).Current()
	}
	return c.initial
}

// Ready is closed once the node has a valid client certificate (at once
// for a Client that neither rotates nor bootstraps).
func (c *Client) Ready() <-chan struct{} { return c.ready }

// Run keeps the credentials current until ctx is done: it starts
// client-go's certificate manager (which requests a certificate at once
// when there is none), closes the API connections whenever the
// certificate changes, reports a pending request by name every
// ReportInterval, and returns an error wrapping ErrDenied when this run's
// request is denied, or ErrNoCertificate after ExitAfter without a
// certificate or a healthy server. Run may be called once.
func (c *Client) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("nodecerts: Client.Run called twice")
	}
	if c.store == nil {
		<-ctx.Done()
		return nil
	}
	logger := klog.FromContext(ctx)
	// The requests the manager creates are remembered: only they are
	// reported, and only their denial ends Run.
	own := &ownRequests{}
	mgr, err := certificate.NewManager(&certificate.Config{
		Ctx:         &ctx,
		ClientsetFn: c.clientsetFn(own),
		Template: &x509.CertificateRequest{Subject: pkix.Name{
			CommonName: nodeUser(c.cfg.NodeName), Organization: []string{"system:nodes"},
		}},
		SignerName:                   certificatesv1.KubeAPIServerClientKubeletSignerName,
		GetUsages:                    certificate.DefaultKubeletClientGetUsages,
		RequestedCertificateLifetime: lifetime(c.cfg.RequestedLifetime),
		CertificateStore:             c.store,
		BootstrapCertificatePEM:      c.bootstrapPEM,
		BootstrapKeyPEM:              c.bootstrapKeyPEM,
		CertificateRenewFailure:      c.metrics.renewErrors,
		Name:                         "client",
	})
	if err != nil {
		return fmt.Errorf("nodecerts: certificate manager: %w", err)
	}
	c.mgr.Store(&mgr)
	mgr.Start()
	defer mgr.Stop()

	clk := c.cfg.Clock
	start := clk.Now()
	ticker := clk.NewTicker(checkInterval)
	defer ticker.Stop()
	last := mgr.Current()
	lastGood, lastReport, lastCACheck := start, time.Time{}, start
	var lastMsg string
	named := false
	rotating := true
	for {
		now := clk.Now()
		cur := mgr.Current()
		if cur != last {
			n := c.conns.closeAll()
			if cur != nil {
				logger.Info("Client certificate loaded; reconnecting to the API server with it",
					"expires", cur.Leaf.NotAfter.UTC(), "closedConnections", n)
			}
			last = cur
		}
		if c.ca != nil && now.Sub(lastCACheck) >= caCheckInterval {
			lastCACheck = now
			if changed, err := c.ca.reload(); err != nil {
				logger.Error(err, "Cannot read the cluster CA; keeping the last one")
			} else if changed {
				logger.Info("The cluster CA changed; reconnecting to the API server with it", "caFile", c.ca.path)
				if err := c.swapCA(); err != nil {
					logger.Error(err, "Cannot use the new cluster CA")
				}
			}
		}
		if cur != nil {
			c.readyOnce.Do(func() { close(c.ready) })
			if !c.cfg.Rotate && rotating {
				mgr.Stop() // bootstrapped once; kept until it expires
				rotating = false
			}
		}
		if cur != nil || mgr.ServerHealthy() {
			lastGood = now
		} else if now.Sub(lastGood) >= c.cfg.ExitAfter {
			return fmt.Errorf("%w for %v and the API server does not answer: restart to bootstrap again", ErrNoCertificate, c.cfg.ExitAfter)
		}
		// Until a request can be named, look every check; then every
		// ReportInterval. Say it when it changes or the interval passed.
		if due := now.Sub(lastReport) >= c.cfg.ReportInterval; cur == nil && (due || !named) {
			msg, kv, n, err := c.report(ctx, own)
			if err != nil {
				return err
			}
			named = n
			if due || msg != lastMsg {
				logger.Info(msg, kv...)
				lastReport, lastMsg = now, msg
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// clientsetFn is the certificate manager's ClientsetFn, recording the
// requests it creates in own. One made with the node's certificate must
// be recorded as made by the node; one made with the bootstrap
// credentials is recorded as made by their user (a bootstrap token's
// system:bootstrap:ID), or by whoever the kubeconfig names when it
// requests itself, so there the API server's answer to the create is what
// later reads must match.
func (c *Client) clientsetFn(own *ownRequests) func(*tls.Certificate) (kubernetes.Interface, error) {
	return func(current *tls.Certificate) (kubernetes.Interface, error) {
		cfg, user := c.certConfig, ""
		if current != nil {
			cfg, user = c.RESTConfig(), nodeUser(c.cfg.NodeName)
		}
		cs, err := c.cfg.NewClientset(cfg)
		if err != nil {
			return nil, err
		}
		return own.recording(cs, user), nil
	}
}

// report says why the node still has no certificate: a message and its
// key/value pairs, whether it names a request, or the denial as an error.
// Only the newest request this run made is named, and only its denial is
// an error: a request of anyone else, whatever its subject, is not looked
// at.
func (c *Client) report(ctx context.Context, own *ownRequests) (string, []any, bool, error) {
	cs, err := c.cfg.NewClientset(c.certConfig)
	if err != nil {
		return "Waiting for a client certificate; no client for the API server", []any{"err", err}, false, nil
	}
	st, err := ownCSR(ctx, cs, own)
	switch {
	case err != nil:
		return "Waiting for a client certificate; cannot read the certificate signing request", []any{"err", err}, false, nil
	case st.notOurs != "":
		return "Waiting for a client certificate; the certificate signing request this node made cannot be followed; the certificate manager makes another when it gives up on it",
			[]any{"csr", st.name, "reason", st.notOurs}, true, nil
	case st.denied != "":
		return "", nil, true, fmt.Errorf("%w: %s was %s", ErrDenied, st.name, st.denied)
	case st.name != "" && !st.issued:
		return "Waiting for the client certificate signing request to be approved",
			[]any{"csr", st.name, "approve", "kubectl certificate approve " + st.name}, true, nil
	case st.name != "":
		return "The client certificate was issued; loading it", []any{"csr", st.name}, true, nil
	}
	return "Waiting for a client certificate; no certificate signing request made yet", nil, false, nil
}

func nodeUser(node string) string { return "system:node:" + node }

func lifetime(d time.Duration) *time.Duration {
	if d == 0 {
		return nil
	}
	return &d
}
