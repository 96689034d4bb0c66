// Command kubelet is nodekit's reference node agent: the kubelet's loop
// assembled from nodekit's packages (see package agent).
//
// Modes:
//
//	kubelet --kubeconfig node.kubeconfig --node-name n1    # cluster mode
//	kubelet --pod-manifest-path /etc/kubernetes/manifests  # standalone
//	kubelet                                                # standalone, embedded demo pod
//
// Without --container-runtime-endpoint it runs the in-process CRI
// simulator; with one (unix:///run/containerd/containerd.sock) it drives a
// real runtime.
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/examples/kubelet/agent"
	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/nodecerts"
	"github.com/nodekit/nodekit/nodestatus"
)

//go:embed manifests/web.yaml
var embeddedPod []byte

func main() {
	// gRPC's default buffer pool goes from 32 KiB to 1 MiB buffers: each
	// relist of a hundred containers (a 40 KiB answer) would take, clear and
	// keep a 1 MiB buffer. Finer tiers, set before any connection exists.
	experimental.SetDefaultBufferPool(mem.NewTieredBufferPool(256, 4<<10, 16<<10, 32<<10, 64<<10, 128<<10, 256<<10, 512<<10, 1<<20))
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kubelet:", err)
		os.Exit(1)
	}
}

// parseFlags turns the command line into agent options (flag.ErrHelp for
// --help). It starts nothing.
func parseFlags(args []string) (agent.Options, error) {
	fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
	var (
		opts         agent.Options
		kubeconfig   string
		address      string
		port         int
		readOnlyPort int
	)
	host, _ := os.Hostname()
	opts.Registry = prometheus.NewRegistry() // /metrics: the agent's parts, the credentials', client-go's
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the node identity (cluster mode); empty runs standalone. With --bootstrap-kubeconfig it is written when missing or expired")
	var bootstrapKubeconfig, certDir string
	var rotateCerts bool
	fs.StringVar(&bootstrapKubeconfig, "bootstrap-kubeconfig", "", "kubeconfig (e.g. a bootstrap token) that requests the node's client certificate when --kubeconfig has no valid one (TLS bootstrapping)")
	fs.StringVar(&certDir, "cert-dir", "", "directory of the node's certificates, client and serving (default <root-dir>/pki)")
	fs.BoolVar(&rotateCerts, "rotate-certificates", false, "request a new client certificate from the cluster before the current one expires")
	fs.BoolVar(&opts.ServerTLSBootstrap, "rotate-server-certificates", false, "request the kubelet API's serving certificate from the cluster (kubernetes.io/kubelet-serving CSRs, approved by the cluster's operator) and rotate it")
	fs.StringVar(&opts.NodeName, "node-name", host, "the node's name")
	fs.StringVar(&opts.PodManifestPath, "pod-manifest-path", "", "directory or file of static pod manifests")
	fs.StringVar(&opts.ManifestURL, "manifest-url", "", "URL serving static pod manifests")
	fs.StringVar(&opts.RuntimeEndpoint, "container-runtime-endpoint", "", "CRI endpoint; empty runs the in-process CRI simulator")
	fs.StringVar(&opts.NodeIP, "node-ip", "", "the node's InternalIP (default: discovered; 10.255.0.1 with the simulator)")
	fs.StringVar(&opts.EvictionHard, "eviction-hard", "", "hard eviction thresholds, e.g. memory.available<100Mi (default: the kubelet's)")
	fs.DurationVar(&opts.EvictionPressureTransitionPeriod, "eviction-pressure-transition-period", 0, "how long a pressure condition stays after its signal recovered (default 5m)")
	fs.IntVar(&opts.ImageGCHighThresholdPercent, "image-gc-high-threshold", 0, "image filesystem usage percent at which image garbage collection starts (default 85)")
	fs.IntVar(&opts.ImageGCLowThresholdPercent, "image-gc-low-threshold", 0, "image filesystem usage percent image garbage collection frees down to (default 80)")
	fs.DurationVar(&opts.ImageMinimumGCAge, "minimum-image-ttl-duration", 0, "minimum age of an unused image before it is garbage collected (default 2m)")
	fs.DurationVar(&opts.ImageMaximumGCAge, "image-maximum-gc-age", 0, "maximum age an image can be unused before it is garbage collected (default 0: none)")
	fs.Func("container-log-max-size", "size at which a container's log is rotated, e.g. 10Mi (default 10Mi; negative: no rotation)", func(v string) error {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return err
		}
		n, ok := q.AsInt64()
		if !ok {
			return fmt.Errorf("%q: not a size in bytes", v)
		}
		opts.ContainerLogMaxSize = n
		return nil
	})
	fs.IntVar(&opts.ContainerLogMaxFiles, "container-log-max-files", 0, "most log files a container may have, the live one included (default 5)")
	fs.IntVar(&opts.ContainerLogMaxWorkers, "container-log-max-workers", 0, "containers whose logs are looked at concurrently (default 1)")
	fs.DurationVar(&opts.ContainerLogMonitorInterval, "container-log-monitor-interval", 0, "how often container logs are looked at for rotation (default 10s)")
	fs.StringVar(&opts.HealthzAddr, "healthz-address", agent.DefaultHealthzAddr, `address of plain-HTTP /healthz, unauthenticated; it serves nothing else ("-" disables)`)
	fs.StringVar(&address, "address", "0.0.0.0", "IP address of the kubelet API (and of --read-only-port)")
	fs.IntVar(&port, "port", 10250, "port of the kubelet API (HTTPS: logs, exec, attach, port-forward, pods, stats, metrics; authenticated, authorized); 0 disables it")
	fs.IntVar(&readOnlyPort, "read-only-port", 0, "port of the deprecated read-only API: plain HTTP, NO authentication, on --address: /pods (every pod spec, env values included), /stats, /metrics; 0 (default) disables it")
	fs.StringVar(&opts.TLSCertFile, "tls-cert-file", "", "serving certificate of the kubelet API (default: self-signed)")
	fs.StringVar(&opts.TLSKeyFile, "tls-private-key-file", "", "key of --tls-cert-file")
	fs.StringVar(&opts.ClientCAFile, "client-ca-file", "", "CA bundle that authenticates client certificates on the kubelet API")
	fs.BoolVar(&opts.TokenWebhook, "authentication-token-webhook", true, "authenticate bearer tokens with TokenReview (cluster mode)")
	fs.BoolVar(&opts.AnonymousAuth, "anonymous-auth", false, "admit unauthenticated kubelet API requests as system:anonymous (with AlwaysAllow authorization: only on a loopback --address)")
	fs.StringVar(&opts.AuthorizationMode, "authorization-mode", "", "kubelet API authorization: Webhook (SubjectAccessReview; needs --kubeconfig) or AlwaysAllow (every authenticated client may do anything) (default: Webhook with a kubeconfig, AlwaysAllow without)")
	fs.Func("cluster-dns", "comma-separated cluster DNS server IPs for dnsPolicy ClusterFirst", func(v string) error {
		opts.ClusterDNS = append(opts.ClusterDNS, strings.Split(v, ",")...)
		return nil
	})
	fs.Func("allowed-unsafe-sysctls", "comma-separated unsafe sysctls or prefixes (kernel.msg*) pods may set", func(v string) error {
		opts.AllowedUnsafeSysctls = append(opts.AllowedUnsafeSysctls, strings.Split(v, ",")...)
		return nil
	})
	fs.StringVar(&opts.ClusterDomain, "cluster-domain", "", "the cluster's DNS domain, e.g. cluster.local")
	fs.StringVar(&opts.ResolvConf, "resolv-conf", "", `node resolver file for dnsPolicy Default (default /etc/resolv.conf with a real runtime; "-" for none)`)
	fs.StringVar(&opts.RootDir, "root-dir", "", "directory of pod volumes and state (default /var/lib/kubelet with a real runtime)")
	fs.StringVar(&opts.PodLogsDir, "pod-logs-dir", "", "root of container logs (default /var/log/pods with a real runtime)")
	serializePulls, maxPulls := true, 0
	fs.BoolVar(&serializePulls, "serialize-image-pulls", true, "pull one image at a time")
	fs.IntVar(&maxPulls, "max-parallel-image-pulls", 0, "with --serialize-image-pulls=false: pulls in flight at most (0: no bound)")
	cgroupsPerQOS := true
	fs.BoolVar(&cgroupsPerQOS, "cgroups-per-qos", true, "keep the pod cgroup tree: kubepods/{burstable,besteffort}/pod<uid> (real runtime only)")
	fs.BoolVar(&opts.FailSwapOn, "fail-swap-on", true, "refuse to start with a container runtime on a host with swap enabled")
	fs.BoolVar(&opts.FailCgroupV1, "fail-cgroupv1", false, "refuse to start with a container runtime on a cgroup v1 host (the kubelet's default is true)")
	fs.StringVar(&opts.CgroupDriver, "cgroup-driver", "cgroupfs", "cgroup driver: cgroupfs or systemd (slices through systemd's D-Bus API); a runtime that reports its own driver overrides it")
	fs.StringVar(&opts.CgroupRoot, "cgroup-root", "/", "parent cgroup of kubepods")
	fs.StringVar(&opts.EnforceNodeAllocatable, "enforce-node-allocatable", agent.EnforcePods, `"pods" caps the kubepods cgroup at the node's allocatable; "none" does not`)
	fs.Int64Var(&opts.PodPIDsLimit, "pod-max-pids", -1, "pids.max of each pod cgroup; -1 for no limit")
	fs.BoolVar(&opts.Evented, "evented-pleg", false, "use the runtime's container events as PLEG hints")
	var configFile, taints, hostnameOverride string
	fs.StringVar(&configFile, "config", "", "a KubeletConfiguration file (kubelet.config.k8s.io/v1beta1); flags given on the command line override it; a field set to a value the agent does not support is refused")
	fs.Func("node-labels", "labels added to the Node at registration, key=value,... (kubernetes.io and k8s.io labels only as a kubelet may set them)", func(v string) error {
		m, err := parseMap(v)
		if opts.NodeLabels == nil {
			opts.NodeLabels = map[string]string{}
		}
		for k, val := range m {
			opts.NodeLabels[k] = val
		}
		return err
	})
	fs.StringVar(&taints, "register-with-taints", "", "taints of the Node at registration, key[=value]:Effect,...")
	fs.IntVar(&opts.MaxPods, "max-pods", 110, "pods capacity of the node")
	fs.Func("system-reserved", "resources held back from allocatable for the system, e.g. cpu=100m,memory=256Mi,ephemeral-storage=1Gi", func(v string) (err error) {
		opts.SystemReserved, err = parseResources(v)
		return err
	})
	fs.Func("kube-reserved", "resources held back from allocatable for Kubernetes daemons, as --system-reserved", func(v string) (err error) {
		opts.KubeReserved, err = parseResources(v)
		return err
	})
	fs.StringVar(&hostnameOverride, "hostname-override", "", "the node's kubernetes.io/hostname and Hostname address (default: the node name)")
	fs.StringVar(&opts.ProviderID, "provider-id", "", "the Node's spec.providerID")
	var apiQPS float64
	var apiBurst int
	fs.Float64Var(&apiQPS, "kube-api-qps", agent.DefaultKubeAPIQPS, "queries per second to the API server")
	fs.IntVar(&apiBurst, "kube-api-burst", agent.DefaultKubeAPIBurst, "burst of queries to the API server")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.Var(klogFlags.Lookup("v").Value, "v", "log verbosity")
	fs.Usage = func() { usage(fs) }
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if configFile != "" {
		fc := fileConfig{opts: &opts, address: &address, port: &port, readOnlyPort: &readOnlyPort,
			serializePulls: &serializePulls, maxPulls: &maxPulls, cgroupsPerQOS: &cgroupsPerQOS,
			apiQPS: &apiQPS, apiBurst: &apiBurst, taints: &taints, rotateCerts: &rotateCerts}
		if err := fc.apply(configFile, set); err != nil {
			return opts, err
		}
	}
	if taints != "" {
		var err error
		if opts.RegisterWithTaints, err = nodestatus.ParseTaints(taints); err != nil {
			return opts, fmt.Errorf("--register-with-taints: %w", err)
		}
	}
	if hostnameOverride != "" {
		// The node's name is its hostname, overridden, unless given.
		opts.Hostname = strings.ToLower(strings.TrimSpace(hostnameOverride))
		if !set["node-name"] {
			opts.NodeName = opts.Hostname
		}
	}
	opts.DisableCgroupsPerQOS = !cgroupsPerQOS
	switch {
	case serializePulls:
		opts.MaxParallelImagePulls = 0
	case maxPulls > 0:
		opts.MaxParallelImagePulls = maxPulls
	default:
		opts.MaxParallelImagePulls = -1
	}
	if certDir == "" {
		root := opts.RootDir
		if root == "" {
			root = agent.DefaultRootDir
		}
		certDir = filepath.Join(root, "pki")
	}
	opts.CertDir = certDir
	if bootstrapKubeconfig != "" && kubeconfig == "" {
		return opts, errors.New("--bootstrap-kubeconfig needs --kubeconfig: the path the node's own kubeconfig is written to")
	}
	if kubeconfig != "" {
		if bootstrapKubeconfig != "" || rotateCerts {
			creds, err := nodecerts.NewClient(nodecerts.ClientConfig{NodeName: opts.NodeName, Kubeconfig: kubeconfig,
				BootstrapKubeconfig: bootstrapKubeconfig, CertDir: certDir, Rotate: rotateCerts, Registerer: opts.Registry})
			if err != nil {
				return opts, err
			}
			opts.Credentials, opts.Kube = creds, creds.RESTConfig()
		} else {
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return opts, fmt.Errorf("--kubeconfig: %w", err)
			}
			opts.Kube = rest.CopyConfig(cfg)
		}
		if apiQPS <= 0 || apiBurst <= 0 {
			return opts, fmt.Errorf("--kube-api-qps %g and --kube-api-burst %d must be positive", apiQPS, apiBurst)
		}
		opts.Kube.QPS, opts.Kube.Burst = float32(apiQPS), apiBurst
	}
	if port < 0 || port > 65535 {
		return opts, fmt.Errorf("--port %d out of range", port)
	}
	if readOnlyPort < 0 || readOnlyPort > 65535 {
		return opts, fmt.Errorf("--read-only-port %d out of range", readOnlyPort)
	}
	if readOnlyPort > 0 {
		opts.ReadOnlyAddr = net.JoinHostPort(address, strconv.Itoa(readOnlyPort))
	}
	if opts.AuthorizationMode == "" {
		opts.AuthorizationMode = agent.AuthorizationWebhook
		if opts.Kube == nil {
			opts.AuthorizationMode = agent.AuthorizationAlwaysAllow
		}
	}
	switch {
	case port == 0:
	case opts.Kube == nil && opts.ClientCAFile == "" && !opts.AnonymousAuth:
		fmt.Fprintln(os.Stderr, "kubelet API off: standalone without --client-ca-file or --anonymous-auth has no way to authenticate")
	default:
		opts.APIAddr = net.JoinHostPort(address, strconv.Itoa(port))
	}
	return opts, nil
}

func run() error {
	opts, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	embedded := opts.Kube == nil && opts.PodManifestPath == "" && opts.ManifestURL == ""
	if embedded {
		opts.PodManifestPath = "(embedded)" // validated as set; the directory is made below
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	if err := installClientMetrics(opts.Registry); err != nil {
		return err
	}
	if embedded {
		dir, err := os.MkdirTemp("", "nodekit-manifests-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if err := os.WriteFile(filepath.Join(dir, "web.yaml"), embeddedPod, 0o644); err != nil {
			return err
		}
		opts.PodManifestPath = dir
	}
	fmt.Fprintln(os.Stderr, modeLine(opts, embedded))
	if opts.ReadOnlyAddr != "" {
		fmt.Fprintf(os.Stderr, "warning: --read-only-port serves every pod's spec without authentication on %s\n", opts.ReadOnlyAddr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := klog.Background()
	ctx = klog.NewContext(ctx, logger)
	a, err := agent.New(ctx, opts)
	if err != nil {
		return err
	}
	if err := a.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	logger.Info("Stopped cleanly")
	return nil
}

// usage is --help: what the agent is, its modes, then every flag.
func usage(fs *flag.FlagSet) {
	out := fs.Output()
	fmt.Fprint(out, `kubelet: nodekit's reference node agent, the kubelet's loop built from nodekit's packages.

Usage:
  kubelet --kubeconfig node.kubeconfig [--node-name n1] [flags]   join a cluster as a node
  kubelet --bootstrap-kubeconfig boot.conf --kubeconfig kubelet.conf --rotate-certificates \
          [--rotate-server-certificates] [--config kubelet.yaml] [flags]
                                                                  join with a bootstrap token: the node's
                                                                  certificates come from the cluster
  kubelet --pod-manifest-path DIR [flags]                         standalone: static pods only
  kubelet                                                         standalone, an embedded demo pod

Without --container-runtime-endpoint the in-process CRI simulator runs the
containers; with unix:///run/containerd/containerd.sock a real runtime does.

Listeners: --port (HTTPS, authenticated and authorized), --healthz-address
(/healthz only), --read-only-port (off; unauthenticated).

Flags:
`)
	fs.PrintDefaults()
}

// modeLine says what runs: where pods come from, what runs their
// containers, and what is served.
func modeLine(o agent.Options, embedded bool) string {
	pods := "pods from the API server"
	switch {
	case embedded:
		pods = "standalone, the embedded pod in " + o.PodManifestPath
	case o.Kube == nil && o.ManifestURL != "":
		pods = "standalone, static pods from " + o.ManifestURL
	case o.Kube == nil:
		pods = "standalone, static pods from " + o.PodManifestPath
	case o.PodManifestPath != "":
		pods += " and static pods from " + o.PodManifestPath
	}
	runtime := "the in-process CRI simulator"
	if o.RuntimeEndpoint != "" {
		runtime = "the CRI runtime at " + o.RuntimeEndpoint
	}
	api := "kubelet API off"
	if o.APIAddr != "" {
		api = "kubelet API on https://" + o.APIAddr
		if !kubeletapi.IsLoopback(o.APIAddr) && o.AnonymousAuth {
			api += " (anonymous requests admitted)"
		}
	}
	line := fmt.Sprintf("node %s: %s; containers on %s; %s", o.NodeName, pods, runtime, api)
	switch {
	case embedded && o.APIAddr != "" && o.AnonymousAuth:
		host, port, _ := net.SplitHostPort(o.APIAddr)
		if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		line += fmt.Sprintf("\ntry: curl -sk https://%s/containerLogs/default/web-%s/nginx", net.JoinHostPort(host, port), strings.ToLower(o.NodeName))
	case embedded && o.APIAddr == "":
		line += "\ntry: --anonymous-auth --address 127.0.0.1 to serve the kubelet API (logs, exec, pods) on loopback"
	}
	return line
}
