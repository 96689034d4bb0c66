package main

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodekit/nodekit/examples/kubelet/agent"
	"github.com/nodekit/nodekit/kubeletconfig"
)

// fileConfig applies a KubeletConfiguration file to the flags' targets.
type fileConfig struct {
	opts                          *agent.Options
	address                       *string
	port, readOnlyPort, maxPulls  *int
	apiBurst                      *int
	serializePulls, cgroupsPerQOS *bool
	rotateCerts                   *bool
	apiQPS                        *float64
	taints                        *string
}

// field maps one supported KubeletConfiguration field (a dotted JSON path)
// onto the flag that overrides it.
type field struct {
	path, flag string
	apply      func(c *kubeletconfig.Config) error
}

// apply loads path, refuses the fields the agent does not support, and
// takes each supported field from the file unless its flag was given on
// the command line (set), as the kubelet does.
func (f fileConfig) apply(path string, set map[string]bool) error {
	c, err := kubeletconfig.Load(path)
	if err != nil {
		return err
	}
	fields := f.fields()
	supported := make([]string, 0, len(fields))
	for _, fl := range fields {
		supported = append(supported, fl.path)
	}
	if err := c.CheckSupported(supported...); err != nil {
		return err
	}
	for _, fl := range fields {
		// A field the file leaves out keeps the flag's default: this
		// agent's defaults differ from the kubelet's only where it can run
		// without a cluster (the simulator, AlwaysAllow standalone).
		if set[fl.flag] || !c.Sets(fl.path) {
			continue
		}
		if err := fl.apply(c); err != nil {
			return fmt.Errorf("%s: %s: %w", path, fl.path, err)
		}
	}
	return nil
}

// fields are the KubeletConfiguration fields this agent honours; the
// docs/reference-agent.md's table lists them.
func (f fileConfig) fields() []field {
	o := f.opts
	healthz := func(c *kubeletconfig.Config) error {
		o.HealthzAddr = "-" // port 0: off
		if *c.HealthzPort > 0 {
			o.HealthzAddr = net.JoinHostPort(c.HealthzBindAddress, strconv.Itoa(int(*c.HealthzPort)))
		}
		return nil
	}
	return []field{
		{"address", "address", func(c *kubeletconfig.Config) error { *f.address = c.Address; return nil }},
		{"port", "port", func(c *kubeletconfig.Config) error { *f.port = int(c.Port); return nil }},
		{"readOnlyPort", "read-only-port", func(c *kubeletconfig.Config) error { *f.readOnlyPort = int(c.ReadOnlyPort); return nil }},
		{"healthzBindAddress", "healthz-address", healthz},
		{"healthzPort", "healthz-address", healthz},
		{"tlsCertFile", "tls-cert-file", func(c *kubeletconfig.Config) error { o.TLSCertFile = c.TLSCertFile; return nil }},
		{"tlsPrivateKeyFile", "tls-private-key-file", func(c *kubeletconfig.Config) error { o.TLSKeyFile = c.TLSPrivateKeyFile; return nil }},
		{"authentication.x509.clientCAFile", "client-ca-file", func(c *kubeletconfig.Config) error {
			o.ClientCAFile = c.Authentication.X509.ClientCAFile
			return nil
		}},
		{"authentication.webhook.enabled", "authentication-token-webhook", func(c *kubeletconfig.Config) error {
			o.TokenWebhook = *c.Authentication.Webhook.Enabled
			return nil
		}},
		{"authentication.anonymous.enabled", "anonymous-auth", func(c *kubeletconfig.Config) error {
			o.AnonymousAuth = *c.Authentication.Anonymous.Enabled
			return nil
		}},
		{"authorization.mode", "authorization-mode", func(c *kubeletconfig.Config) error { o.AuthorizationMode = string(c.Authorization.Mode); return nil }},
		{"clusterDNS", "cluster-dns", func(c *kubeletconfig.Config) error { o.ClusterDNS = c.ClusterDNS; return nil }},
		{"clusterDomain", "cluster-domain", func(c *kubeletconfig.Config) error { o.ClusterDomain = c.ClusterDomain; return nil }},
		{"resolvConf", "resolv-conf", func(c *kubeletconfig.Config) error {
			o.ResolvConf = *c.ResolverConfig
			if o.ResolvConf == "" {
				o.ResolvConf = "-"
			}
			return nil
		}},
		{"podLogsDir", "pod-logs-dir", func(c *kubeletconfig.Config) error { o.PodLogsDir = c.PodLogsDir; return nil }},
		{"staticPodPath", "pod-manifest-path", func(c *kubeletconfig.Config) error { o.PodManifestPath = c.StaticPodPath; return nil }},
		{"staticPodURL", "manifest-url", func(c *kubeletconfig.Config) error { o.ManifestURL = c.StaticPodURL; return nil }},
		{"evictionHard", "eviction-hard", func(c *kubeletconfig.Config) error {
			var parts []string
			for k, v := range c.EvictionHard {
				parts = append(parts, k+"<"+v)
			}
			slices.Sort(parts)
			o.EvictionHard = strings.Join(parts, ",")
			return nil
		}},
		{"evictionPressureTransitionPeriod", "eviction-pressure-transition-period", func(c *kubeletconfig.Config) error {
			o.EvictionPressureTransitionPeriod = c.EvictionPressureTransitionPeriod.Duration
			return nil
		}},
		{"imageGCHighThresholdPercent", "image-gc-high-threshold", func(c *kubeletconfig.Config) error {
			o.ImageGCHighThresholdPercent = int(*c.ImageGCHighThresholdPercent)
			return nil
		}},
		{"imageGCLowThresholdPercent", "image-gc-low-threshold", func(c *kubeletconfig.Config) error {
			o.ImageGCLowThresholdPercent = int(*c.ImageGCLowThresholdPercent)
			return nil
		}},
		{"imageMinimumGCAge", "minimum-image-ttl-duration", func(c *kubeletconfig.Config) error {
			o.ImageMinimumGCAge = c.ImageMinimumGCAge.Duration
			return nil
		}},
		{"imageMaximumGCAge", "image-maximum-gc-age", func(c *kubeletconfig.Config) error {
			o.ImageMaximumGCAge = c.ImageMaximumGCAge.Duration
			return nil
		}},
		{"containerLogMaxSize", "container-log-max-size", func(c *kubeletconfig.Config) error {
			q, err := resource.ParseQuantity(c.ContainerLogMaxSize)
			if err != nil {
				return fmt.Errorf("%q: %w", c.ContainerLogMaxSize, err)
			}
			n, ok := q.AsInt64()
			if !ok {
				return fmt.Errorf("%q: not a size in bytes", c.ContainerLogMaxSize)
			}
			o.ContainerLogMaxSize = n
			return nil
		}},
		{"containerLogMaxFiles", "container-log-max-files", func(c *kubeletconfig.Config) error {
			o.ContainerLogMaxFiles = int(*c.ContainerLogMaxFiles)
			return nil
		}},
		{"containerLogMaxWorkers", "container-log-max-workers", func(c *kubeletconfig.Config) error {
			o.ContainerLogMaxWorkers = int(*c.ContainerLogMaxWorkers)
			return nil
		}},
		{"containerLogMonitorInterval", "container-log-monitor-interval", func(c *kubeletconfig.Config) error {
			o.ContainerLogMonitorInterval = c.ContainerLogMonitorInterval.Duration
			return nil
		}},
		{"allowedUnsafeSysctls", "allowed-unsafe-sysctls", func(c *kubeletconfig.Config) error { o.AllowedUnsafeSysctls = c.AllowedUnsafeSysctls; return nil }},
		{"cgroupsPerQOS", "cgroups-per-qos", func(c *kubeletconfig.Config) error { *f.cgroupsPerQOS = *c.CgroupsPerQOS; return nil }},
		{"cgroupDriver", "cgroup-driver", func(c *kubeletconfig.Config) error { o.CgroupDriver = c.CgroupDriver; return nil }},
		{"cgroupRoot", "cgroup-root", func(c *kubeletconfig.Config) error {
			if c.CgroupRoot != "" {
				o.CgroupRoot = c.CgroupRoot
			}
			return nil
		}},
		{"enforceNodeAllocatable", "enforce-node-allocatable", func(c *kubeletconfig.Config) error {
			switch {
			case slices.Equal(c.EnforceNodeAllocatable, []string{agent.EnforcePods}):
				o.EnforceNodeAllocatable = agent.EnforcePods
			case len(c.EnforceNodeAllocatable) == 0 || slices.Equal(c.EnforceNodeAllocatable, []string{agent.EnforceNone}):
				o.EnforceNodeAllocatable = agent.EnforceNone
			default:
				return fmt.Errorf("%v: only [pods] or [] (none) are supported", c.EnforceNodeAllocatable)
			}
			return nil
		}},
		{"podPidsLimit", "pod-max-pids", func(c *kubeletconfig.Config) error { o.PodPIDsLimit = *c.PodPidsLimit; return nil }},
		{"serializeImagePulls", "serialize-image-pulls", func(c *kubeletconfig.Config) error { *f.serializePulls = *c.SerializeImagePulls; return nil }},
		{"maxParallelImagePulls", "max-parallel-image-pulls", func(c *kubeletconfig.Config) error {
			if c.MaxParallelImagePulls != nil {
				*f.maxPulls = int(*c.MaxParallelImagePulls)
			}
			return nil
		}},
		{"kubeAPIQPS", "kube-api-qps", func(c *kubeletconfig.Config) error { *f.apiQPS = float64(*c.KubeAPIQPS); return nil }},
		{"kubeAPIBurst", "kube-api-burst", func(c *kubeletconfig.Config) error { *f.apiBurst = int(c.KubeAPIBurst); return nil }},
		{"containerRuntimeEndpoint", "container-runtime-endpoint", func(c *kubeletconfig.Config) error {
			o.RuntimeEndpoint = c.ContainerRuntimeEndpoint
			return nil
		}},
		{"maxPods", "max-pods", func(c *kubeletconfig.Config) error { o.MaxPods = int(c.MaxPods); return nil }},
		{"systemReserved", "system-reserved", func(c *kubeletconfig.Config) (err error) {
			o.SystemReserved, err = resourcesOf(c.SystemReserved)
			return err
		}},
		{"kubeReserved", "kube-reserved", func(c *kubeletconfig.Config) (err error) {
			o.KubeReserved, err = resourcesOf(c.KubeReserved)
			return err
		}},
		{"registerWithTaints", "register-with-taints", func(c *kubeletconfig.Config) error {
			var specs []string
			for _, t := range c.RegisterWithTaints {
				spec := t.Key
				if t.Value != "" {
					spec += "=" + t.Value
				}
				specs = append(specs, spec+":"+string(t.Effect))
			}
			*f.taints = strings.Join(specs, ",")
			return nil
		}},
		{"rotateCertificates", "rotate-certificates", func(c *kubeletconfig.Config) error { *f.rotateCerts = c.RotateCertificates; return nil }},
		{"serverTLSBootstrap", "rotate-server-certificates", func(c *kubeletconfig.Config) error { o.ServerTLSBootstrap = c.ServerTLSBootstrap; return nil }},
		{"failSwapOn", "fail-swap-on", func(c *kubeletconfig.Config) error { o.FailSwapOn = *c.FailSwapOn; return nil }},
		{"failCgroupV1", "fail-cgroupv1", func(c *kubeletconfig.Config) error { o.FailCgroupV1 = *c.FailCgroupV1; return nil }},
		{"providerID", "provider-id", func(c *kubeletconfig.Config) error { o.ProviderID = c.ProviderID; return nil }},
		{"enableSystemLogHandler", "", func(c *kubeletconfig.Config) error {
			if !*c.EnableSystemLogHandler {
				o.NodeLogDir = "-"
			}
			return nil
		}},
		{"enableSystemLogQuery", "", func(c *kubeletconfig.Config) error {
			o.NodeLogQuery = c.EnableSystemLogQuery != nil && *c.EnableSystemLogQuery
			return nil
		}},
	}
}

// parseMap parses key=value,... (--node-labels).
func parseMap(spec string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(spec, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want key=value", kv)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

// parseResources parses name=quantity,... (--system-reserved).
func parseResources(spec string) (v1.ResourceList, error) {
	m, err := parseMap(spec)
	if err != nil {
		return nil, err
	}
	return resourcesOf(m)
}

// resourcesOf converts a reservation (cpu, memory, ephemeral-storage,
// pid) to a resource list.
func resourcesOf(m map[string]string) (v1.ResourceList, error) {
	out := v1.ResourceList{}
	for k, v := range m {
		switch v1.ResourceName(k) {
		case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage:
		case "pid":
			return nil, fmt.Errorf("resource %q: pid reservations are not supported by this agent", k)
		default:
			return nil, fmt.Errorf("resource %q: want cpu, memory or ephemeral-storage", k)
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("resource %s=%q: %w", k, v, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("resource %s=%q is negative", k, v)
		}
		out[v1.ResourceName(k)] = q
	}
	return out, nil
}
