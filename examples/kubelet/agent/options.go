// Package agent is the reference assembly of nodekit: a node agent that
// composes the library's blocks into the kubelet's loop. The kubelet command
// in the parent directory is a thin flag wrapper around it; tests and the
// demo run it in-process.
package agent

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/admission"
	"github.com/nodekit/nodekit/cgroups"
	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/eviction"
	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/nodecerts"
	"github.com/nodekit/nodekit/nodestatus"
)

// Options configure an Agent. Zero values give a standalone agent on the
// in-process CRI simulator.
type Options struct {
	// NodeName is the node's name. Required.
	NodeName string
	// Kube, if set, is the node identity's client config (cluster mode).
	// nil runs standalone: no API server, pods from PodManifestPath only.
	// A zero QPS (Burst) is the kubelet's kubeAPIQPS 50 (kubeAPIBurst 100),
	// not client-go's 5 (10), which delays pod status writes by seconds as
	// soon as a few pods start together.
	Kube *rest.Config
	// PodManifestPath is a directory (or file) of static pod manifests.
	PodManifestPath string
	// ManifestURL serves static pods over HTTP.
	ManifestURL string
	// RuntimeEndpoint is a CRI endpoint ("unix:///run/containerd/containerd.sock").
	// Empty runs the in-process CRI simulator on a socket under StateDir.
	RuntimeEndpoint string
	// Sim is an existing simulator to serve when RuntimeEndpoint is empty
	// (the demo and tests script it); nil creates one.
	Sim *crisim.Sim
	// StateDir holds the simulator socket. Default a temporary directory.
	StateDir string
	// HealthzAddr is where plain-HTTP /healthz is served without
	// authentication, and nothing else (the kubelet's
	// healthzBindAddress:healthzPort). Default 127.0.0.1:10248; "-"
	// disables it.
	HealthzAddr string
	// ReadOnlyAddr, if set, serves the kubelet's deprecated read-only port
	// (--read-only-port): /healthz, /pods (every pod's spec, inline env
	// values included), /stats and /metrics in plain HTTP to anyone who
	// can connect. Empty, the default, disables it.
	ReadOnlyAddr string
	// APIAddr is the address of the kubelet's authenticated HTTPS API
	// (logs, exec, attach, port-forward, stats; the kubelet's
	// --address:--port, 0.0.0.0:10250). Empty or "-" disables it; port 0
	// picks a free port, which the node reports as its kubelet endpoint.
	APIAddr string
	// TLSCertFile and TLSKeyFile are the API's serving certificate
	// (re-read on change). Empty: a self-signed one. With
	// ServerTLSBootstrap they are served until the first signed one.
	TLSCertFile, TLSKeyFile string
	// Registry, if set, is the registry every part registers its metrics
	// on and /metrics serves (the host may add its own, such as client-go's
	// and the credentials'); it must not hold the Go and process
	// collectors, which the agent adds. nil: a new one.
	Registry *prometheus.Registry
	// Credentials, if set, are the node's rotating client credentials
	// (--bootstrap-kubeconfig, --rotate-certificates): Kube must be built
	// from its RESTConfig; the agent runs it and waits for its first valid
	// certificate before it claims and registers the node.
	Credentials *nodecerts.Client
	// ServerTLSBootstrap requests the API's serving certificate from the
	// cluster (a kubernetes.io/kubelet-serving CSR for the node's
	// addresses; serverTLSBootstrap, --rotate-server-certificates) and
	// rotates it; the API serves nothing until one is issued. Cluster
	// mode only.
	ServerTLSBootstrap bool
	// CertDir holds the serving certificate store with
	// ServerTLSBootstrap (--cert-dir). Default <RootDir>/pki.
	CertDir string
	// ClientCAFile authenticates client certificates on the API.
	ClientCAFile string
	// TokenWebhook authenticates bearer tokens with TokenReview
	// (--authentication-token-webhook; cluster mode).
	TokenWebhook bool
	// AnonymousAuth admits unauthenticated API requests as
	// system:anonymous (--anonymous-auth). Default false.
	AnonymousAuth bool
	// AuthorizationMode is "Webhook" (SubjectAccessReview; the default)
	// or "AlwaysAllow".
	AuthorizationMode string
	// PodLogsDir is where container logs go:
	// <PodLogsDir>/<ns>_<pod>_<uid>/<container>/<restart>.log. Default
	// /var/log/pods with a real runtime, a directory under StateDir with
	// the simulator.
	PodLogsDir string
	// NodeLogDir is served read-only under the kubelet API's /logs/ (the
	// kubelet's enableSystemLogHandler, on by default, serves /var/log/).
	// Default /var/log with a real runtime, nothing with the simulator;
	// "-" serves nothing (/logs/ answers 405, as the kubelet with the
	// handler off).
	NodeLogDir string
	// NodeLogQuery serves the node log query (/logs/?query=…: journald
	// services or files in NodeLogDir), the kubelet's enableSystemLogQuery
	// (default false). It needs NodeLogDir.
	NodeLogQuery bool
	// RootDir is the kubelet's --root-dir: pod volumes live under
	// <RootDir>/pods/<uid>. Default /var/lib/kubelet with a real runtime, a
	// directory under StateDir with the simulator.
	RootDir string
	// ClusterDNS are the cluster DNS servers pods with dnsPolicy
	// ClusterFirst use (--cluster-dns).
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain (--cluster-domain), e.g.
	// cluster.local.
	ClusterDomain string
	// ResolvConf is the node resolver file pods with dnsPolicy Default
	// copy (--resolv-conf). Default /etc/resolv.conf with a real runtime;
	// "-" for none.
	ResolvConf string
	// NodeIP is the node's InternalIP. Default: discovered (with the
	// simulator: 10.255.0.1, a made-up address).
	NodeIP string
	// EvictionHard is the kubelet's --eviction-hard. Default upstream's.
	EvictionHard string
	// EvictionPressureTransitionPeriod is the kubelet's
	// --eviction-pressure-transition-period: how long a pressure
	// condition stays after the signal went back under its threshold.
	// Default 5m.
	EvictionPressureTransitionPeriod time.Duration
	// ImageGCHighThresholdPercent and ImageGCLowThresholdPercent are the
	// kubelet's image GC thresholds (imageGCHighThresholdPercent, 85;
	// imageGCLowThresholdPercent, 80); ImageMinimumGCAge and
	// ImageMaximumGCAge its minimum (2m) and maximum (0: none) image ages.
	// Zero values are the kubelet's defaults.
	ImageGCHighThresholdPercent, ImageGCLowThresholdPercent int
	ImageMinimumGCAge, ImageMaximumGCAge                    time.Duration
	// ContainerLogMaxSize (bytes; negative: no rotation), ContainerLogMaxFiles,
	// ContainerLogMaxWorkers and ContainerLogMonitorInterval are the
	// kubelet's container log rotation settings (10Mi, 5, 1, 10s), applied
	// with a real runtime. Zero values are the kubelet's defaults.
	ContainerLogMaxSize                          int64
	ContainerLogMaxFiles, ContainerLogMaxWorkers int
	ContainerLogMonitorInterval                  time.Duration
	// AllowedUnsafeSysctls are the kubelet's --allowed-unsafe-sysctls:
	// sysctl names or prefixes ("kernel.msg*") pods may set beyond the
	// safe set.
	AllowedUnsafeSysctls []string
	// DisableCgroupsPerQOS turns off the pod cgroup tree (the kubelet's
	// --cgroups-per-qos=false): pods then run in the runtime's default
	// cgroups. Pod cgroups are kept only with a real runtime.
	DisableCgroupsPerQOS bool
	// FailSwapOn refuses to start with a real runtime on a host with swap
	// enabled (the kubelet's --fail-swap-on, default true there; this
	// agent does not limit containers' swap).
	FailSwapOn bool
	// FailCgroupV1 refuses to start with a real runtime on a cgroup v1
	// host (the kubelet's failCgroupV1, default true there since v1.35;
	// false here, where cgroup v1 is supported as well as v2).
	FailCgroupV1 bool
	// CgroupDriver is the kubelet's --cgroup-driver: cgroupfs (the
	// default) or systemd. A runtime that reports its own driver
	// (RuntimeConfig) overrides it, as the kubelet's
	// KubeletCgroupDriverFromCRI.
	CgroupDriver string
	// CgroupRoot is the kubelet's --cgroup-root, the parent of kubepods.
	// Default "/".
	CgroupRoot string
	// EnforceNodeAllocatable is the kubelet's --enforce-node-allocatable:
	// "pods" (the default) caps the kubepods cgroup at the node's
	// allocatable; "none" does not.
	EnforceNodeAllocatable string
	// PodPIDsLimit is the kubelet's --pod-max-pids: pids.max of every pod
	// cgroup when positive.
	PodPIDsLimit int64
	// MaxParallelImagePulls bounds image pulls in flight: zero serializes
	// them (the kubelet's serializeImagePulls default), negative leaves
	// them unbounded.
	MaxParallelImagePulls int
	// MemoryCapacity of the simulated machine (simulator only). Default 4Gi.
	MemoryCapacity int64
	// Clock drives every package. Default the real clock.
	Clock clock.WithTicker
	// Evented uses the runtime's event stream as PLEG hints.
	Evented bool

	// NodeLabels are added to the Node at registration (--node-labels);
	// labels in the kubernetes.io and k8s.io namespaces only as the
	// kubelet may set them itself.
	NodeLabels map[string]string
	// RegisterWithTaints are the Node's taints at registration
	// (--register-with-taints).
	RegisterWithTaints []v1.Taint
	// Hostname is the node's kubernetes.io/hostname and Hostname
	// address (--hostname-override). Default NodeName.
	Hostname string
	// ProviderID is the Node's spec.providerID (--provider-id).
	ProviderID string
	// MaxPods is the node's pods capacity (--max-pods). Default 110.
	MaxPods int
	// SystemReserved and KubeReserved are held back from allocatable
	// (--system-reserved, --kube-reserved), with the hard eviction
	// thresholds: allocatable = capacity − system − kube − eviction. The
	// kubepods cgroup is capped at capacity − system − kube when
	// EnforceNodeAllocatable is "pods".
	SystemReserved, KubeReserved v1.ResourceList
}

// DefaultHealthzAddr is where /healthz listens by default (the kubelet's
// healthz port).
const DefaultHealthzAddr = "127.0.0.1:10248"

// The kubelet's defaults for its API client (kubeAPIQPS, kubeAPIBurst),
// used when Options.Kube leaves them zero.
const (
	DefaultKubeAPIQPS   = 50
	DefaultKubeAPIBurst = 100
)

// Validate reports what New would refuse in o, without doing anything:
// a host checks its flags with it before it starts or prints anything.
func (o Options) Validate() error { return o.defaults() }

func (o *Options) defaults() error {
	var errs []error
	if o.NodeName == "" {
		errs = append(errs, errors.New("a node name is required"))
	}
	if o.Kube == nil && o.PodManifestPath == "" && o.ManifestURL == "" {
		errs = append(errs, errors.New("standalone mode needs a pod manifest path or URL (or give a kubeconfig)"))
	}
	if o.NodeIP != "" && net.ParseIP(o.NodeIP) == nil {
		errs = append(errs, fmt.Errorf("node IP %q is not an IP address", o.NodeIP))
	}
	if err := nodestatus.ValidateKubeletLabels(o.NodeLabels); err != nil {
		errs = append(errs, err)
	}
	for _, t := range o.RegisterWithTaints {
		if err := nodestatus.ValidateTaint(t); err != nil {
			errs = append(errs, err)
		}
	}
	if o.MaxPods < 0 {
		errs = append(errs, fmt.Errorf("max pods %d must not be negative", o.MaxPods))
	}
	for name, list := range map[string]v1.ResourceList{"system-reserved": o.SystemReserved, "kube-reserved": o.KubeReserved} {
		for r, q := range list {
			if q.Sign() < 0 {
				errs = append(errs, fmt.Errorf("%s: %s %s is negative", name, r, q.String()))
			}
		}
	}
	if o.MemoryCapacity < 0 {
		errs = append(errs, fmt.Errorf("memory capacity %d must not be negative", o.MemoryCapacity))
	}
	if _, err := eviction.ParseThresholdFlags(o.EvictionHard, "", "", ""); err != nil {
		errs = append(errs, fmt.Errorf("eviction-hard: %w", err))
	}
	if _, err := admission.Sysctls(o.AllowedUnsafeSysctls); err != nil {
		errs = append(errs, fmt.Errorf("allowed-unsafe-sysctls: %w", err))
	}
	switch o.EnforceNodeAllocatable {
	case "":
		o.EnforceNodeAllocatable = EnforcePods
	case EnforcePods, EnforceNone:
	default:
		errs = append(errs, fmt.Errorf("enforce-node-allocatable %q: want %s or %s (the system-reserved and kube-reserved cgroups are not enforced)", o.EnforceNodeAllocatable, EnforcePods, EnforceNone))
	}
	switch o.CgroupDriver {
	case "", cgroups.DriverCgroupfs, cgroups.DriverSystemd:
	default:
		errs = append(errs, fmt.Errorf("cgroup driver %q: want %s or %s", o.CgroupDriver, cgroups.DriverCgroupfs, cgroups.DriverSystemd))
	}
	switch o.AuthorizationMode {
	case "", AuthorizationWebhook, AuthorizationAlwaysAllow:
	default:
		errs = append(errs, fmt.Errorf("authorization mode %q: want %s or %s", o.AuthorizationMode, AuthorizationWebhook, AuthorizationAlwaysAllow))
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		errs = append(errs, errors.New("the TLS certificate and key files go together"))
	}
	if o.Kube == nil && (o.Credentials != nil || o.ServerTLSBootstrap) {
		errs = append(errs, errors.New("certificates from the cluster (bootstrap, rotation, serving certificate requests) need a kubeconfig"))
	}
	if o.PodLogsDir == "" && o.RuntimeEndpoint != "" {
		o.PodLogsDir = DefaultPodLogsDir
	}
	if o.RootDir == "" && o.RuntimeEndpoint != "" {
		o.RootDir = DefaultRootDir
	}
	if o.NodeLogDir == "" && o.RuntimeEndpoint != "" {
		o.NodeLogDir = "/var/log"
	}
	if o.NodeLogDir == "-" {
		o.NodeLogDir = ""
	}
	if o.NodeLogQuery && o.NodeLogDir == "" {
		errs = append(errs, errors.New("the node log query needs the node log directory (the kubelet: enableSystemLogQuery needs enableSystemLogHandler)"))
	}
	if o.ResolvConf == "" && o.RuntimeEndpoint != "" {
		o.ResolvConf = "/etc/resolv.conf"
	}
	if o.ResolvConf == "-" {
		o.ResolvConf = ""
	}
	for _, ip := range o.ClusterDNS {
		if net.ParseIP(ip) == nil {
			errs = append(errs, fmt.Errorf("cluster DNS %q is not an IP address", ip))
		}
	}
	if o.HealthzAddr == "" {
		o.HealthzAddr = DefaultHealthzAddr
	}
	if err := o.checkExposure(); err != nil {
		errs = append(errs, err)
	}
	if o.MemoryCapacity == 0 {
		o.MemoryCapacity = 4 << 30
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.RuntimeEndpoint == "" && o.NodeIP == "" {
		o.NodeIP = "10.255.0.1"
	}
	return errors.Join(errs...)
}

// Values of Options.EnforceNodeAllocatable.
const (
	EnforcePods = "pods"
	EnforceNone = "none"
)

// DefaultRootDir is the kubelet's --root-dir.
const DefaultRootDir = "/var/lib/kubelet"

// DefaultPodLogsDir is the kubelet's podLogsDir.
const DefaultPodLogsDir = "/var/log/pods"

// runtimeTimeout bounds each CRI call (the kubelet's --runtime-request-timeout).
const runtimeTimeout = 2 * time.Minute

// ErrOpenAPI is returned for a kubelet API that would let anyone on the
// network run commands in every container (kubeletapi.New refuses it too;
// Validate reports it before anything is built).
var ErrOpenAPI = kubeletapi.ErrOpenAPI

// checkExposure refuses anonymous requests authorized by AlwaysAllow on
// an address other hosts can reach: every client could exec, attach,
// port-forward and read logs of every container.
func (o *Options) checkExposure() error {
	if o.APIAddr == "" || o.APIAddr == kubeletapi.Disabled || !o.AnonymousAuth {
		return nil
	}
	mode := o.AuthorizationMode
	if mode == "" && o.Kube == nil {
		mode = AuthorizationAlwaysAllow // what buildAPI would need
	}
	if err := kubeletapi.CheckExposure(o.APIAddr, nil, o.AnonymousAuth, mode == AuthorizationAlwaysAllow); err != nil {
		return fmt.Errorf("%w; flags: bind the API to a loopback address (--address 127.0.0.1), authenticate clients instead "+
			"(--client-ca-file, without --anonymous-auth), or join a cluster (--kubeconfig) for Webhook authorization", err)
	}
	return nil
}
