package virtualnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/kubeletapi"
)

// Authorization modes of the kubelet API (APIConfig.AuthorizationMode, the
// kubelet's --authorization-mode).
const (
	AuthorizationWebhook     = "Webhook"
	AuthorizationAlwaysAllow = "AlwaysAllow"
)

// APIConfig configures the kubelet API that the agent serves for all its
// nodes from one kubeletapi.Server (MultiNode): kubectl logs, exec, attach
// and port-forward of their pods (through the Provider's LogProvider and
// ExecProvider; 501 without them), /pods and /healthz. Every node reports
// the server's port in status.daemonEndpoints.kubeletEndpoint; the API
// server reaches it at the node's address (Config.NodeIP, or the Hostname
// address, the node's name, per its --kubelet-preferred-address-types).
// Requests are authorized on nodes/<subresource> with no node name, which
// the API server's kubelet client (allowed on all nodes) passes.
type APIConfig struct {
	// Addr is the HTTPS address; default kubeletapi.DefaultAddr (":10250").
	// It is bound when Run starts.
	Addr string
	// Listener, if set, is used instead of Addr (port 0 in tests). Run
	// closes it.
	Listener net.Listener

	// TLSCertFile and TLSKeyFile are the serving certificate and key
	// (--tls-cert-file, --tls-private-key-file), re-read when they change.
	// Both empty: a self-signed certificate for "localhost".
	TLSCertFile, TLSKeyFile string
	// ClientCAFile enables client-certificate authentication
	// (--client-ca-file): the API server's kubelet client certificate.
	ClientCAFile string
	// TokenWebhook authenticates bearer tokens with TokenReviews through
	// Config.Client (--authentication-token-webhook).
	TokenWebhook bool
	// Anonymous lets unauthenticated requests in as system:anonymous
	// (--anonymous-auth). With AuthorizationAlwaysAllow it is refused
	// (kubeletapi.ErrOpenAPI) unless the API listens on loopback: anyone
	// who could connect could exec into every pod.
	Anonymous bool
	// AuthorizationMode is AuthorizationWebhook (SubjectAccessReviews
	// through Config.Client; the default) or AuthorizationAlwaysAllow.
	AuthorizationMode string

	// StreamIdleTimeout closes idle exec, attach and port-forward sessions;
	// default kubeletapi.DefaultStreamIdleTimeout (4h).
	StreamIdleTimeout time.Duration
}

func (c *APIConfig) validate() error {
	switch c.AuthorizationMode {
	case "":
		c.AuthorizationMode = AuthorizationWebhook
	case AuthorizationWebhook, AuthorizationAlwaysAllow:
	default:
		return fmt.Errorf("%w: API.AuthorizationMode %q is not %s or %s", ErrInvalidConfig,
			c.AuthorizationMode, AuthorizationWebhook, AuthorizationAlwaysAllow)
	}
	if c.ClientCAFile == "" && !c.TokenWebhook && !c.Anonymous {
		return fmt.Errorf("%w: API: no authentication: set ClientCAFile, TokenWebhook or Anonymous", ErrInvalidConfig)
	}
	if c.StreamIdleTimeout < 0 {
		return fmt.Errorf("%w: negative API.StreamIdleTimeout", ErrInvalidConfig)
	}
	if c.Addr == "" {
		c.Addr = kubeletapi.DefaultAddr
	}
	var ln net.Addr
	if c.Listener != nil {
		ln = c.Listener.Addr()
	}
	if err := kubeletapi.CheckExposure(c.Addr, ln, c.Anonymous, c.AuthorizationMode == AuthorizationAlwaysAllow); err != nil {
		return fmt.Errorf("%w: API: %w", ErrInvalidConfig, err)
	}
	return nil
}

// buildAPI builds the kubelet API server. Its listener is bound by Run
// (bindAPI), so that New opens no socket.
func (a *Agent) buildAPI() error {
	c := a.cfg.API
	a.apiLn = &lazyListener{addr: c.Addr, Listener: c.Listener}
	cfg := kubeletapi.Config{
		MultiNode:         true,
		Listener:          a.apiLn,
		HealthzAddr:       kubeletapi.Disabled,
		TLSCertFile:       c.TLSCertFile,
		TLSKeyFile:        c.TLSKeyFile,
		Pods:              agentPods{a},
		HealthChecks:      []kubeletapi.HealthCheck{{Name: "provider", Check: a.cfg.Provider.Healthy}},
		StreamIdleTimeout: c.StreamIdleTimeout,
		Registerer:        a.cfg.Registerer,
		Auth: kubeletapi.AuthConfig{
			ClientCAFile: c.ClientCAFile,
			Anonymous:    c.Anonymous,
			AlwaysAllow:  c.AuthorizationMode == AuthorizationAlwaysAllow,
		},
	}
	if c.Listener == nil {
		cfg.Addr = c.Addr // where apiLn will bind: kubeletapi.New must not bind it to ask
	}
	if c.TokenWebhook {
		cfg.Auth.TokenReview = a.cfg.Client
	}
	if !cfg.Auth.AlwaysAllow {
		cfg.Auth.SubjectAccessReview = a.cfg.Client
	}
	if lp, ok := a.cfg.Provider.(LogProvider); ok {
		cfg.Logs = lp
	}
	if _, ok := a.cfg.Provider.(StatsProvider); ok {
		cfg.NodeSummary = a.nodeSummary
	}
	if ep, ok := a.cfg.Provider.(ExecProvider); ok {
		st, err := kubeletapi.NewInlineStreamer(ep, c.StreamIdleTimeout, 0)
		if err != nil {
			return fmt.Errorf("virtualnode: kubelet API: %w", err)
		}
		cfg.Streaming = st
	}
	var err error
	if a.api, err = kubeletapi.New(cfg); err != nil {
		return fmt.Errorf("virtualnode: kubelet API: %w", err)
	}
	return nil
}

// bindAPI binds the API's listener and records its port for the nodes'
// status.
func (a *Agent) bindAPI() error {
	if err := a.apiLn.bind(); err != nil {
		return fmt.Errorf("virtualnode: kubelet API: %w", err)
	}
	if tcp, ok := a.apiLn.Addr().(*net.TCPAddr); ok {
		a.apiPort.Store(int32(tcp.Port))
	}
	return nil
}

// lazyListener is the kubelet API's listener, bound on first use (Run)
// rather than when the server is built (New).
type lazyListener struct {
	addr string
	once sync.Once
	err  error
	net.Listener
}

func (l *lazyListener) bind() error {
	l.once.Do(func() {
		if l.Listener == nil {
			l.Listener, l.err = net.Listen("tcp", l.addr)
		}
	})
	return l.err
}

// errNotBound is Close's error for a listener that could not be bound.
var errNotBound = errors.New("virtualnode: kubelet API listener not bound")

// Accept, Close and Addr bind the listener if Run has not.
func (l *lazyListener) Accept() (net.Conn, error) {
	if err := l.bind(); err != nil {
		return nil, err
	}
	return l.Listener.Accept()
}

func (l *lazyListener) Close() error {
	if l.bind() != nil {
		return errNotBound
	}
	return l.Listener.Close()
}

func (l *lazyListener) Addr() net.Addr {
	if l.bind() != nil {
		return &net.TCPAddr{}
	}
	return l.Listener.Addr()
}

// agentPods is the kubelet API's view of the agent's pods: those of the
// cache bound to a node of the agent, each decoded with the status the agent
// reports for it (the kubelet API's pod lookups carry no context: the
// provider's PodStatus gets a background one).
type agentPods struct{ a *Agent }

func (p agentPods) GetPodByName(namespace, name string) (*v1.Pod, bool) {
	pod := p.a.managedPod(p.a.cache.named(namespace, name))
	if pod == nil {
		return nil, false
	}
	return p.a.syncer.current(context.Background(), pod), true
}

func (p agentPods) GetPods() []*v1.Pod {
	var pods []*v1.Pod
	for _, n := range p.a.nodes {
		for _, e := range p.a.cache.podsOn(n.name) {
			if pod := p.a.cache.decode(e); pod != nil {
				pods = append(pods, p.a.syncer.current(context.Background(), pod))
			}
		}
	}
	return pods
}
