package kubeletapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/kubeclient"
)

// Defaults of the kubelet (v1.36).
const (
	// DefaultAddr is the kubelet's authenticated HTTPS port (--port 10250).
	DefaultAddr = ":10250"
	// DefaultHealthzAddr is the kubelet's plain healthz endpoint
	// (--healthz-bind-address 127.0.0.1, --healthz-port 10248).
	DefaultHealthzAddr = "127.0.0.1:10248"
	// DefaultAuthenticationCacheTTL caches TokenReview answers
	// (authentication.webhook.cacheTTL).
	DefaultAuthenticationCacheTTL = 2 * time.Minute
	// DefaultAuthorizationAllowTTL caches allowed SubjectAccessReviews
	// (authorization.webhook.cacheAuthorizedTTL).
	DefaultAuthorizationAllowTTL = 5 * time.Minute
	// DefaultAuthorizationDenyTTL caches denied SubjectAccessReviews
	// (authorization.webhook.cacheUnauthorizedTTL).
	DefaultAuthorizationDenyTTL = 30 * time.Second
	// DefaultStreamIdleTimeout closes an idle exec, attach or
	// port-forward session handled in process
	// (streamingConnectionIdleTimeout).
	DefaultStreamIdleTimeout = 4 * time.Hour
	// DefaultStreamCreationTimeout bounds the client's stream setup of an
	// in-process session.
	DefaultStreamCreationTimeout = 30 * time.Second
	// DefaultIdleTimeout closes idle kept-alive connections (the
	// kubelet's server, matching http.DefaultTransport's keep-alive).
	DefaultIdleTimeout = 90 * time.Second
	// DefaultReadWriteTimeout bounds reading a request and writing its
	// response (the kubelet's server).
	DefaultReadWriteTimeout = 4 * time.Hour
	// DefaultWebhookTimeout bounds each TokenReview or SubjectAccessReview.
	DefaultWebhookTimeout = 10 * time.Second
)

// Disabled, as an address, turns a listener off.
const Disabled = "-"

// Config configures a Server. Zero values mean the kubelet's defaults.
type Config struct {
	// NodeName is the node's name: the name in the authorization
	// attributes (nodes/<name>/proxy …) and of the self-signed
	// certificate. Required unless MultiNode.
	NodeName string
	// MultiNode serves pods of many nodes from one server (virtual nodes):
	// requests are authorized on nodes/<subresource> of every node (no
	// resource name), which a caller allowed on all nodes passes, as the
	// API server's kubelet client is.
	MultiNode bool

	// Addr is the HTTPS address of the authenticated API. Default ":10250";
	// Disabled: Run does not serve it (a host that serves Handler itself).
	Addr string
	// Listener, if set, is used instead of listening on Addr (a host that
	// must know the bound port before Run, e.g. with port 0). Run closes it.
	// New asks it for its address (see Auth.InsecureAnonymousOnNetwork)
	// unless Addr is set too, naming where it is bound (for a listener
	// that binds on first use).
	Listener net.Listener
	// HealthzAddr serves plain-HTTP /healthz only, without authentication.
	// Default "127.0.0.1:10248"; Disabled turns it off.
	HealthzAddr string
	// HealthzListener, if set, is used instead of listening on
	// HealthzAddr. Run closes it.
	HealthzListener net.Listener
	// ReadOnlyAddr, if set, serves the kubelet's deprecated read-only port:
	// plain HTTP without authentication for /healthz, /pods, /stats and
	// /metrics. Empty (the kubelet's --read-only-port 0) disables it.
	// It tells every pod's spec, inline env values included, to anyone who
	// can connect: never bind it where untrusted clients reach it.
	ReadOnlyAddr string
	// ReadOnlyListener, if set, is used instead of listening on
	// ReadOnlyAddr. Run closes it.
	ReadOnlyListener net.Listener

	// TLSCertFile and TLSKeyFile are the serving certificate and key
	// (--tls-cert-file, --tls-private-key-file). They are re-read when they
	// change (looked at during handshakes, at most once a second of Clock);
	// a pair that does not load leaves the previous one in service. Both
	// empty: a self-signed certificate for NodeName and NodeIPs is
	// generated in memory.
	TLSCertFile, TLSKeyFile string
	// NodeIPs are added to the self-signed certificate's names.
	NodeIPs []net.IP
	// GetCertificate, if set, supplies the serving certificate at each
	// handshake instead of the files (serverTLSBootstrap: a rotating
	// certificate from the cluster, as nodecerts.Serving.GetCertificate).
	// An error fails the handshake: the API serves nothing until there is
	// a certificate. Exclusive with TLSCertFile.
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)

	// Auth configures the kubelet's authentication and authorization.
	Auth AuthConfig
	// Clock drives the review caches' expiry, the reviews' timeouts and
	// their retries, and times requests for
	// kubelet_http_requests_duration_seconds; default the real clock.
	Clock clock.WithTicker
	// Authenticator, if set, replaces the authenticator built from Auth.
	Authenticator authenticator.Request
	// Authorizer, if set, replaces the authorizer built from Auth.
	Authorizer authorizer.Authorizer

	// Pods resolves pods by name and backs /pods. Required.
	Pods PodLister
	// RunningPods backs /runningpods/ (the kubelet's debugging handler
	// listing what the runtime runs). nil: 404 there.
	RunningPods RunningPodLister
	// Logs backs /containerLogs. nil answers 501 there.
	Logs LogSource
	// Streaming backs /exec, /attach and /portForward. nil answers 501.
	Streaming Streamer
	// Runner backs /run. nil answers 501.
	Runner Runner
	// Summary backs /stats/summary, /metrics/resource and
	// /metrics/cadvisor. nil answers 501.
	Summary SummaryProvider
	// Cadvisor names the cgroups and describes the machine for
	// /metrics/cadvisor. Zero: the cgroupfs driver's and containerd's
	// cgroup names, no machine_* families.
	Cadvisor CadvisorConfig
	// NodeSummary backs, in MultiNode mode, each node's stats at
	// /stats/nodes/{node}/summary and /metrics/nodes/{node}/metrics/resource
	// (the path a node names in its metrics.k8s.io/resource-metrics-path
	// annotation, which metrics-server v0.7 and later scrapes instead of
	// /metrics/resource). It returns nil, nil for a node it does not serve
	// (404). nil: those paths are not served.
	NodeSummary func(ctx context.Context, node string) (*statsapi.Summary, error)
	// HealthChecks are added to /healthz after ping (e.g. syncloop,
	// pleg). Each /healthz request records the result of every check it
	// runs on /metrics/slis.
	HealthChecks []HealthCheck
	// Metrics is served at /metrics (the host's registry). nil: not served.
	Metrics prometheus.Gatherer
	// ProbeMetrics is served at /metrics/probes. nil: not served.
	ProbeMetrics prometheus.Gatherer
	// Configz, if set, is served at /configz as {"kubeletconfig": Configz}.
	Configz any
	// NodeLogDir, if set, is served read-only under /logs/
	// (enableSystemLogHandler; the kubelet serves /var/log/). Empty answers
	// 405 "logs endpoint is disabled.", as the kubelet with the handler off.
	NodeLogDir string
	// NodeLogQuery serves the node log query on /logs/: ?query=<service or
	// file> with sinceTime, untilTime, tailLines, pattern and boot, as the
	// kubelet with enableSystemLogQuery (default false; the NodeLogQuery
	// feature is GA and locked on in v1.36, the field still gates it).
	// Services are read from Journal, or from a log file named after them
	// in NodeLogDir, which it needs.
	NodeLogQuery bool
	// Journal reads service logs for the node log query. Default
	// &Journalctl{}: journalctl from PATH, run with the request's context.
	Journal Journal
	// NodeLogQueryTimeout bounds a node log query. Default 30s, the
	// kubelet's.
	NodeLogQueryTimeout time.Duration

	// StreamIdleTimeout and StreamCreationTimeout are used by
	// NewInlineStreamer sessions and passed to proxies. Defaults 4h, 30s.
	StreamIdleTimeout, StreamCreationTimeout time.Duration
	// MaxRequestHeaderBytes bounds request headers. Default 1 MiB.
	MaxRequestHeaderBytes int
	// IdleTimeout closes a kept-alive connection with no request for
	// that long. Default 90s, the kubelet's.
	IdleTimeout time.Duration
	// ReadTimeout and WriteTimeout bound reading a whole request and
	// writing its response (upgraded streams are not bound by them).
	// Defaults 4h, the kubelet's. Request headers must arrive within 30s.
	ReadTimeout, WriteTimeout time.Duration

	// Registerer receives the server's request metrics (nil: none), the
	// kubelet's kubelet_http_requests_total, kubelet_http_inflight_requests
	// and kubelet_http_requests_duration_seconds (timed on Clock).
	// Registering them twice on one registry is an ErrInvalidConfig from
	// New.
	Registerer prometheus.Registerer
}

// AuthConfig is the kubelet's authentication and authorization
// configuration (KubeletConfiguration.authentication/authorization).
type AuthConfig struct {
	// ClientCAFile enables x509 client-certificate authentication
	// (--client-ca-file); re-read when it changes, as the serving
	// certificate files are. The certificate's
	// common name is the user, its organizations the groups.
	ClientCAFile string
	// TokenReview enables bearer-token authentication through TokenReview
	// (--authentication-token-webhook). nil: tokens are not accepted.
	TokenReview kubeclient.TokenReviewsGetter
	// Anonymous lets unauthenticated requests through as
	// system:anonymous (--anonymous-auth). Default false.
	Anonymous bool
	// AuthenticationCacheTTL caches token reviews. Default 2m.
	AuthenticationCacheTTL time.Duration

	// AlwaysAllow authorizes every authenticated request
	// (--authorization-mode=AlwaysAllow). Otherwise SubjectAccessReview
	// must be set (Webhook mode).
	AlwaysAllow bool
	// SubjectAccessReview authorizes requests through the API server
	// (--authorization-mode=Webhook).
	SubjectAccessReview kubeclient.SubjectAccessReviewsGetter
	// AuthorizationAllowTTL and AuthorizationDenyTTL cache decisions.
	// Defaults 5m and 30s.
	AuthorizationAllowTTL, AuthorizationDenyTTL time.Duration
	// WebhookTimeout bounds each review request. Default 10s.
	WebhookTimeout time.Duration

	// InsecureAnonymousOnNetwork lets New accept Anonymous with
	// AlwaysAllow on an address other hosts can reach (not loopback):
	// every client that can connect may then exec into, attach to and
	// read the logs of every container. For tests and isolated networks
	// only; without it New refuses such a Config with ErrOpenAPI.
	InsecureAnonymousOnNetwork bool
}

// ErrOpenAPI is returned (wrapped in ErrInvalidConfig) for a Config that
// would let anyone who can reach the API exec into every container:
// anonymous requests authorized by AlwaysAllow on a non-loopback address.
var ErrOpenAPI = errors.New("kubeletapi: anonymous requests with AlwaysAllow authorization on a network address would let anyone who can reach it exec into every container")

// checkExposure refuses an open API (ErrOpenAPI) unless opted into.
func (c *Config) checkExposure() error {
	a := c.Auth
	if a.InsecureAnonymousOnNetwork || c.Authenticator != nil || c.Authorizer != nil {
		return nil
	}
	var addr net.Addr
	if c.Listener != nil && (c.Addr == "" || c.Addr == Disabled) {
		addr = c.Listener.Addr()
	}
	if err := CheckExposure(c.Addr, addr, a.Anonymous, a.AlwaysAllow); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}

// CheckExposure returns an error wrapping ErrOpenAPI if anonymous requests
// authorized by AlwaysAllow would be served on an address other hosts can
// reach: the bound address ln if not nil, else addr ("" meaning
// DefaultAddr, Disabled nothing served). New makes this check; hosts call
// it to refuse such a configuration before building anything.
func CheckExposure(addr string, ln net.Addr, anonymous, alwaysAllow bool) error {
	if !anonymous || !alwaysAllow {
		return nil
	}
	switch {
	case ln != nil:
		if _, ok := ln.(*net.UnixAddr); ok {
			return nil // a Unix socket: local by nature
		}
		addr = ln.String()
	case addr == "":
		addr = DefaultAddr
	case addr == Disabled:
		return nil
	}
	if IsLoopback(addr) {
		return nil
	}
	return fmt.Errorf("%w (%s): bind it to a loopback address, authenticate clients (client certificates, tokens) "+
		"or authorize them (SubjectAccessReview)", ErrOpenAPI, addr)
}

// IsLoopback reports whether the host of a host:port address is a
// loopback address or "localhost" (an empty or unspecified host listens
// on every interface).
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ErrInvalidConfig wraps every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("kubeletapi: invalid config")

func (c *Config) defaults() error {
	var errs []error
	if c.NodeName == "" && !c.MultiNode {
		errs = append(errs, errors.New("NodeName is required"))
	}
	if c.NodeName != "" && c.MultiNode {
		errs = append(errs, errors.New("NodeName and MultiNode are exclusive"))
	}
	if c.NodeSummary != nil && !c.MultiNode {
		errs = append(errs, errors.New("NodeSummary needs MultiNode"))
	}
	if c.NodeLogQuery && c.NodeLogDir == "" {
		errs = append(errs, errors.New("NodeLogQuery needs NodeLogDir (the kubelet: enableSystemLogHandler is required for enableSystemLogQuery)"))
	}
	if c.Pods == nil {
		//lint:ignore ST1005 Pods is the field's name
		errs = append(errs, errors.New("Pods is required"))
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		errs = append(errs, errors.New("TLSCertFile and TLSKeyFile must be given together"))
	}
	if c.GetCertificate != nil && c.TLSCertFile != "" {
		errs = append(errs, errors.New("GetCertificate and TLSCertFile are exclusive"))
	}
	for name, d := range map[string]time.Duration{
		"StreamIdleTimeout": c.StreamIdleTimeout, "StreamCreationTimeout": c.StreamCreationTimeout,
		"IdleTimeout": c.IdleTimeout, "ReadTimeout": c.ReadTimeout, "WriteTimeout": c.WriteTimeout,
		"Auth.AuthenticationCacheTTL": c.Auth.AuthenticationCacheTTL, "Auth.AuthorizationAllowTTL": c.Auth.AuthorizationAllowTTL,
		"Auth.AuthorizationDenyTTL": c.Auth.AuthorizationDenyTTL, "Auth.WebhookTimeout": c.Auth.WebhookTimeout,
		"NodeLogQueryTimeout": c.NodeLogQueryTimeout,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s %v must not be negative", name, d))
		}
	}
	if c.MaxRequestHeaderBytes < 0 {
		errs = append(errs, fmt.Errorf("MaxRequestHeaderBytes %d must not be negative", c.MaxRequestHeaderBytes))
	}
	if c.Authenticator == nil && c.Auth.ClientCAFile == "" && c.Auth.TokenReview == nil && !c.Auth.Anonymous {
		errs = append(errs, errors.New("no authentication method: set Auth.ClientCAFile, Auth.TokenReview, Auth.Anonymous or Authenticator"))
	}
	if c.Authorizer == nil && !c.Auth.AlwaysAllow && c.Auth.SubjectAccessReview == nil {
		errs = append(errs, errors.New("no authorization mode: set Auth.SubjectAccessReview (Webhook), Auth.AlwaysAllow or Authorizer"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := c.checkExposure(); err != nil {
		return err
	}
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.HealthzAddr == "" {
		c.HealthzAddr = DefaultHealthzAddr
	}
	setDefault(&c.IdleTimeout, DefaultIdleTimeout)
	setDefault(&c.ReadTimeout, DefaultReadWriteTimeout)
	setDefault(&c.WriteTimeout, DefaultReadWriteTimeout)
	setDefault(&c.StreamIdleTimeout, DefaultStreamIdleTimeout)
	setDefault(&c.StreamCreationTimeout, DefaultStreamCreationTimeout)
	setDefault(&c.Auth.AuthenticationCacheTTL, DefaultAuthenticationCacheTTL)
	setDefault(&c.Auth.AuthorizationAllowTTL, DefaultAuthorizationAllowTTL)
	setDefault(&c.Auth.AuthorizationDenyTTL, DefaultAuthorizationDenyTTL)
	setDefault(&c.Auth.WebhookTimeout, DefaultWebhookTimeout)
	setDefault(&c.NodeLogQueryTimeout, DefaultNodeLogQueryTimeout)
	if c.NodeLogQuery && c.Journal == nil {
		c.Journal = &Journalctl{}
	}
	if c.MaxRequestHeaderBytes == 0 {
		c.MaxRequestHeaderBytes = 1 << 20
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	c.Cadvisor.defaults()
	return nil
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}
