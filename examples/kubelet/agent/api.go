package agent

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/kubeletapi"
	kubeletcri "github.com/nodekit/nodekit/kubeletapi/cri"
	"github.com/nodekit/nodekit/nodecerts"
)

// Authorization modes of the kubelet API (--authorization-mode).
const (
	AuthorizationWebhook     = "Webhook"
	AuthorizationAlwaysAllow = "AlwaysAllow"
)

// buildAPI builds the kubelet API server over the agent's parts and binds
// its listeners, so that the node reports the real port and a port clash
// fails New with one message. Without an API address only /healthz (and
// the read-only port, if asked for) is served.
func (a *Agent) buildAPI() error {
	o := a.opts
	rt, err := kubeletcri.New(kubeletcri.Config{Runtime: a.rt, Clock: o.Clock})
	if err != nil {
		return err
	}
	cfg := kubeletapi.Config{
		NodeName:    o.NodeName,
		Addr:        kubeletapi.Disabled,
		HealthzAddr: kubeletapi.Disabled,
		TLSCertFile: o.TLSCertFile, TLSKeyFile: o.TLSKeyFile,
		Pods: agentPods{a}, RunningPods: rt, Logs: rt, Streaming: rt, Runner: rt,
		Summary: a.summary,
		HealthChecks: []kubeletapi.HealthCheck{
			{Name: "syncloop", Check: a.syncLoopHealth},
			{Name: "pleg", Check: a.pleg.Healthy},
		},
		Metrics:      a.registry,
		ProbeMetrics: prefixGatherer{a.registry, "prober_"},
		Registerer:   a.registry,
		Auth:         kubeletapi.AuthConfig{ClientCAFile: o.ClientCAFile, Anonymous: o.AnonymousAuth},
	}
	// /metrics/cadvisor: the cgroups as this node's driver and runtime name
	// them, and the machine.
	cfg.Cadvisor.Machine, _ = a.machine()
	cfg.Cadvisor.ContainerCgroup = kubeletapi.RuntimeContainerCgroup(a.runtimeID, o.CgroupDriver)
	if a.cgroups != nil {
		cfg.Cadvisor.PodCgroup = a.cgroups.PodCgroup
	}
	if a.sim == nil {
		// A real runtime's cgroups, at the mount cgroups.Config defaults
		// to: page cache, CFS throttling, limits and packet counters.
		cfg.Cadvisor.CgroupRoot = cgroupMount
	}
	if ip := net.ParseIP(o.NodeIP); ip != nil {
		cfg.NodeIPs = []net.IP{ip}
	}
	if o.ServerTLSBootstrap && a.client != nil {
		certDir := o.CertDir
		if certDir == "" {
			certDir = filepath.Join(o.RootDir, "pki")
		}
		if a.serving, err = nodecerts.NewServing(nodecerts.ServingConfig{
			NodeName: o.NodeName, Client: a.client, CertDir: certDir, Addresses: a.nodeAddresses,
			CertFile: o.TLSCertFile, KeyFile: o.TLSKeyFile, Recorder: a.recorder, Registerer: a.registry, Clock: o.Clock,
		}); err != nil {
			return err
		}
		cfg.TLSCertFile, cfg.TLSKeyFile, cfg.GetCertificate = "", "", a.serving.GetCertificate
	}
	switch o.AuthorizationMode {
	case AuthorizationAlwaysAllow:
		cfg.Auth.AlwaysAllow = true
	default: // Webhook
		if a.client != nil {
			cfg.Auth.SubjectAccessReview = a.kube
		}
	}
	if o.TokenWebhook && a.client != nil {
		cfg.Auth.TokenReview = a.kube
	}
	cfg.Configz = a.configz(cfg.Auth)
	cfg.NodeLogDir, cfg.NodeLogQuery = o.NodeLogDir, o.NodeLogQuery
	if o.APIAddr != "" && o.APIAddr != kubeletapi.Disabled {
		if a.client == nil && cfg.Auth.SubjectAccessReview == nil && !cfg.Auth.AlwaysAllow {
			return errors.New("agent: the kubelet API needs --authorization-mode=AlwaysAllow without a kubeconfig")
		}
		if cfg.Listener, err = a.listen("kubelet API", o.APIAddr); err != nil {
			return err
		}
		a.apiPort = cfg.Listener.Addr().(*net.TCPAddr).Port
	} else {
		// Only /healthz and the read-only port: no request reaches the
		// authenticated routes, so any valid auth configuration will do.
		cfg.Auth = kubeletapi.AuthConfig{Anonymous: true, AlwaysAllow: true}
	}
	if cfg.HealthzListener, err = a.listen("healthz", o.HealthzAddr); err != nil {
		return err
	}
	if cfg.ReadOnlyListener, err = a.listen("read-only port", o.ReadOnlyAddr); err != nil {
		return err
	}
	a.api, err = kubeletapi.New(cfg)
	return err
}

// nodeAddresses are the node's addresses as last reported: the names its
// serving certificate is requested for.
func (a *Agent) nodeAddresses() []v1.NodeAddress {
	if a.nodeStatus != nil {
		if n := a.nodeStatus.Node(); n != nil {
			return n.Status.Addresses
		}
	}
	return nil
}

// listen binds one of the API's listeners ("" or "-": none, a nil
// listener). The agent closes them if Run never hands them over.
func (a *Agent) listen(name, addr string) (net.Listener, error) {
	if addr == "" || addr == kubeletapi.Disabled {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("agent: %s: %w", name, err)
	}
	a.listeners = append(a.listeners, ln)
	return ln, nil
}

// agentPods is the kubelet API's view of the agent's pods, each with its
// latest status.
type agentPods struct{ a *Agent }

func (p agentPods) GetPodByName(namespace, name string) (*v1.Pod, bool) {
	found, ok := p.a.pods.GetByName(namespace, name)
	if !ok {
		return nil, false
	}
	return p.a.statusMgr.WithStatus(found), true
}

func (p agentPods) GetPods() []*v1.Pod {
	pods := p.a.pods.Pods()
	for i, pod := range pods {
		pods[i] = p.a.statusMgr.WithStatus(pod)
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
// /configz: what runs, so authentication and authorization are read from
// the API's configuration, not from the options asked for.
func (a *Agent) configz(auth kubeletapi.AuthConfig) map[string]any {
	o := a.opts
	mode := AuthorizationWebhook
	if auth.AlwaysAllow {
		mode = AuthorizationAlwaysAllow
	}
	return map[string]any{
		"kind": "KubeletConfiguration", "apiVersion": "kubelet.config.k8s.io/v1beta1",
		"podLogsDir":         o.PodLogsDir,
		"healthzBindAddress": o.HealthzAddr,
		"readOnlyAddress":    o.ReadOnlyAddr,
		"tlsCertFile":        o.TLSCertFile, "tlsPrivateKeyFile": o.TLSKeyFile,
		"authentication": map[string]any{
			"x509":      map[string]any{"clientCAFile": auth.ClientCAFile},
			"webhook":   map[string]any{"enabled": auth.TokenReview != nil},
			"anonymous": map[string]any{"enabled": auth.Anonymous},
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
