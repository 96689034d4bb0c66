package agent

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/kubeletapi"
	kubeletcri "github.com/nodekit/nodekit/kubeletapi/cri"
)

// Authorization modes of the kubelet API (--authorization-mode).
const (
	AuthorizationWebhook     = "Webhook"
	AuthorizationAlwaysAllow = "AlwaysAllow"
)

// buildAPI builds the kubelet API server over the agent's parts and binds
// its port, so that the node reports the real port. Without an API address
// only the loopback read-only endpoint (HTTPAddr) is served.
func (a *Agent) buildAPI() error {
	o := a.opts
	rt, err := kubeletcri.New(kubeletcri.Config{Runtime: a.rt, Clock: o.Clock})
	if err != nil {
		return err
	}
	cfg := kubeletapi.Config{
		NodeName:     o.NodeName,
		Addr:         kubeletapi.Disabled,
		HealthzAddr:  kubeletapi.Disabled,
		ReadOnlyAddr: o.HTTPAddr,
		TLSCertFile:  o.TLSCertFile, TLSKeyFile: o.TLSKeyFile,
		Pods: agentPods{a}, Logs: rt, Streaming: rt, Runner: rt,
		Summary: a.summary,
		HealthChecks: []kubeletapi.HealthCheck{
			{Name: "syncloop", Check: a.syncLoopHealth},
			{Name: "pleg", Check: a.pleg.Healthy},
		},
		Metrics:      a.registry,
		ProbeMetrics: prefixGatherer{a.registry, "prober_"},
		Configz:      a.configz(),
		Clock:        o.Clock,
		Registerer:   a.registry,
		Auth:         kubeletapi.AuthConfig{ClientCAFile: o.ClientCAFile, Anonymous: o.AnonymousAuth},
	}
	if ip := net.ParseIP(o.NodeIP); ip != nil {
		cfg.NodeIPs = []net.IP{ip}
	}
	switch o.AuthorizationMode {
	case AuthorizationAlwaysAllow:
		cfg.Auth.AlwaysAllow = true
	default: // Webhook
		if a.client != nil {
			cfg.Auth.SubjectAccessReview = a.client.AuthorizationV1()
		}
	}
	if o.TokenWebhook && a.client != nil {
		cfg.Auth.TokenReview = a.client.AuthenticationV1()
	}
	if o.APIAddr != "" && o.APIAddr != kubeletapi.Disabled {
		if a.client == nil && cfg.Auth.SubjectAccessReview == nil && !cfg.Auth.AlwaysAllow {
			return errors.New("agent: the kubelet API needs --authorization-mode=AlwaysAllow without a kubeconfig")
		}
		ln, err := net.Listen("tcp", o.APIAddr)
		if err != nil {
			return fmt.Errorf("agent: kubelet API: listen %s: %w", o.APIAddr, err)
		}
		a.apiPort = ln.Addr().(*net.TCPAddr).Port
		a.apiLn, cfg.Listener = ln, ln
	} else {
		// Only the read-only endpoint: no request reaches the
		// authenticated routes, so any valid auth configuration will do.
		cfg.Auth = kubeletapi.AuthConfig{Anonymous: true, AlwaysAllow: true}
	}
	a.api, err = kubeletapi.New(cfg)
	return err
}

// agentPods is the kubelet API's view of the agent's pods, each with its
// latest status.
type agentPods struct{ a *Agent }

func (p agentPods) GetPodByName(namespace, name string) (*v1.Pod, bool) {
	found, ok := p.a.pods.GetByName(namespace, name)
	if !ok {
		return nil, false
	}
	return p.a.status.withStatus(found), true
}

func (p agentPods) GetPods() []*v1.Pod {
	pods := p.a.pods.Pods()
	for i, pod := range pods {
		pods[i] = p.a.status.withStatus(pod)
	}
	return pods
}

// prefixGatherer serves the metric families of a registry whose names
// start with a prefix (/metrics/probes from the agent's one registry).
type prefixGatherer struct {
	g      prometheus.Gatherer
	prefix string
}

func (p prefixGatherer) Gather() ([]*dto.MetricFamily, error) {
	all, err := p.g.Gather()
	out := all[:0]
	for _, f := range all {
		if strings.HasPrefix(f.GetName(), p.prefix) {
			out = append(out, f)
		}
	}
	return out, err
}

// configz is the part of a KubeletConfiguration the agent has, served at
// /configz.
func (a *Agent) configz() map[string]any {
	o := a.opts
	mode := o.AuthorizationMode
	if mode == "" {
		mode = AuthorizationWebhook
	}
	return map[string]any{
		"kind": "KubeletConfiguration", "apiVersion": "kubelet.config.k8s.io/v1beta1",
		"podLogsDir":         o.PodLogsDir,
		"healthzBindAddress": o.HTTPAddr,
		"tlsCertFile":        o.TLSCertFile, "tlsPrivateKeyFile": o.TLSKeyFile,
		"authentication": map[string]any{
			"x509":      map[string]any{"clientCAFile": o.ClientCAFile},
			"webhook":   map[string]any{"enabled": o.TokenWebhook},
			"anonymous": map[string]any{"enabled": o.AnonymousAuth},
		},
		"authorization":         map[string]any{"mode": mode},
		"evictionHard":          o.EvictionHard,
		"runtimeRequestTimeout": runtimeTimeout.String(),
	}
}

// syncLoopHealth fails when the sync loop has not iterated for two
// housekeeping periods and a half.
func (a *Agent) syncLoopHealth() error {
	if last := a.loop.LastIteration(); !last.IsZero() && a.opts.Clock.Since(last) > 5*time.Second {
		return fmt.Errorf("sync loop last iterated %s ago", a.opts.Clock.Since(last).Round(time.Millisecond))
	}
	return nil
}
