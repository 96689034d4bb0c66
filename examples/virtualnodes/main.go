// Command virtualnodes registers many virtual nodes against a cluster and
// runs the pods bound to them on a simulated provider, in one process (see
// packages virtualnode and virtualnode/simulated, and README.md).
//
//	virtualnodes --kubeconfig ~/.kube/config --nodes 1000 --node-prefix vn-
//
// It uses one credential for every node: give it a role that may create and
// patch nodes and node status, renew leases in kube-node-lease, list and watch
// pods, patch pod status and delete pods, and (for the kubelet API's webhook
// authentication and authorization) create tokenreviews and
// subjectaccessreviews.
//
// All nodes share one kubelet API server (--port, default 10250) for kubectl
// logs and exec of their pods.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/kubeclient"
	"github.com/nodekit/nodekit/lease"
	"github.com/nodekit/nodekit/virtualnode"
	"github.com/nodekit/nodekit/virtualnode/simulated"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "virtualnodes:", err)
		os.Exit(1)
	}
}

// defaultGCPercent is --gc-percent's default: Go's own. Measured at 1,000
// nodes and 10,000 pods (docs/benchmarks.md), 50 saves about 9 MiB of RSS
// for 10 to 14 millicores, more CPU than the memory is worth by default.
const defaultGCPercent = 100

func run() error {
	fs := flag.NewFlagSet("virtualnodes", flag.ContinueOnError)
	var (
		kubeconfig, prefix, memory string
		nodes, cpu, pods           int
		qps                        float64
		readyDelay, stopDelay      time.Duration
		nodeIP, address            string
		port                       int
		api                        virtualnode.APIConfig
		shards, gcPercent          int
		identity                   string
		leaseSeconds               int
		statusFrequency            time.Duration
	)
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default: in-cluster config or $KUBECONFIG)")
	fs.IntVar(&nodes, "nodes", 10, "number of virtual nodes")
	fs.StringVar(&prefix, "node-prefix", "vnode-", "node names are this prefix and a number")
	fs.IntVar(&cpu, "cpu", virtualnode.DefaultCPU, "cpu capacity of each node, in cores")
	fs.StringVar(&memory, "memory", virtualnode.DefaultMemory, "memory capacity of each node")
	fs.IntVar(&pods, "pods", virtualnode.DefaultPods, "pod capacity of each node")
	fs.DurationVar(&readyDelay, "ready-delay", time.Second, "time from a pod's creation to Running and Ready")
	fs.DurationVar(&stopDelay, "stop-delay", 0, "time containers take to stop after SIGTERM (cut at the grace period)")
	fs.IntVar(&leaseSeconds, "node-lease-duration-seconds", 40, "duration of each node's Lease, renewed every quarter of it (the kubelet's nodeLeaseDurationSeconds; the control plane's --node-monitor-grace-period must not be shorter)")
	fs.DurationVar(&statusFrequency, "node-status-update-frequency", 10*time.Second, "how often each node's status is computed (patched on change, else every 5 minutes; the kubelet's nodeStatusUpdateFrequency)")
	fs.Float64Var(&qps, "qps", 200, "API requests per second for pod traffic (heartbeats are not limited)")
	fs.StringVar(&nodeIP, "node-ip", "", "InternalIP of every node, where the API server reaches the kubelet API (default: one address per node from 172.16.0.0/12, not routable)")
	fs.StringVar(&address, "address", "0.0.0.0", "IP address the kubelet API listens on")
	fs.IntVar(&port, "port", 10250, "port of the kubelet API shared by all nodes (kubectl logs, exec; the pods' usage for metrics-server and kubectl top); 0 disables it")
	fs.StringVar(&api.TLSCertFile, "tls-cert-file", "", "serving certificate of the kubelet API (default: self-signed)")
	fs.StringVar(&api.TLSKeyFile, "tls-private-key-file", "", "private key of --tls-cert-file")
	fs.StringVar(&api.ClientCAFile, "client-ca-file", "", "CA bundle that authenticates client certificates (the API server's kubelet client)")
	fs.BoolVar(&api.TokenWebhook, "authentication-token-webhook", true, "authenticate bearer tokens with TokenReviews")
	fs.BoolVar(&api.Anonymous, "anonymous-auth", false, "let unauthenticated requests in as system:anonymous")
	fs.StringVar(&api.AuthorizationMode, "authorization-mode", virtualnode.AuthorizationWebhook, "kubelet API authorization: Webhook (SubjectAccessReviews) or AlwaysAllow")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	var profiling string
	fs.StringVar(&profiling, "profiling-address", "", "serve Go profiles (/debug/pprof/) on this address, e.g. 127.0.0.1:6060; empty: off")
	klog.InitFlags(klogFlags)
	fs.IntVar(&shards, "shards", 0, "share the nodes among replicas: split them into this many shards, each run by the replica holding its Lease (0: this process runs every node)")
	fs.StringVar(&identity, "identity", "", "this replica's name in the shard Leases, unique among replicas (default: the hostname); with --shards")
	fs.Var(klogFlags.Lookup("v").Value, "v", "log verbosity")
	fs.IntVar(&gcPercent, "gc-percent", defaultGCPercent, "the Go collector's target (GOGC): a collection when the heap has grown this many percent over the live data; lower trades CPU for memory (50: about 9 MiB less at 1,000 nodes for 10 to 14 millicores more); the GOGC environment variable wins when set")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if gcPercent <= 0 {
		return fmt.Errorf("--gc-percent %d must be positive", gcPercent)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	mem, err := resource.ParseQuantity(memory)
	if err != nil {
		return fmt.Errorf("--memory: %w", err)
	}
	if leaseSeconds <= 0 {
		return fmt.Errorf("--node-lease-duration-seconds %d must be positive", leaseSeconds)
	}
	if statusFrequency <= 0 {
		return fmt.Errorf("--node-status-update-frequency %s must be positive", statusFrequency)
	}
	if port < 0 || port > 65535 {
		return fmt.Errorf("--port %d out of range", port)
	}
	if nodeIP != "" && net.ParseIP(nodeIP) == nil {
		return fmt.Errorf("--node-ip %q is not an IP address", nodeIP)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	restCfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	restCfg.QPS, restCfg.Burst = float32(qps), int(2*qps)
	client, err := kubeclient.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	leaseDuration := time.Duration(leaseSeconds) * time.Second
	// The kubelet's heartbeat timeout: the status update frequency, at
	// most the lease duration.
	heartbeat, err := kubeclient.NewForConfig(lease.HeartbeatRESTConfig(restCfg, min(statusFrequency, leaseDuration)))
	if err != nil {
		return err
	}
	sim, err := simulated.New(simulated.Config{ReadyDelay: readyDelay, StopDelay: stopDelay})
	if err != nil {
		return err
	}
	defer sim.Close()
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	cfg := virtualnode.Config{Client: client, HeartbeatClient: heartbeat, Nodes: names,
		CPU: cpu, Memory: mem, Pods: pods, Provider: sim,
		LeaseDuration: leaseDuration, StatusUpdateFrequency: statusFrequency,
		// The simulator reads no more of a pod's status than the trimmed one
		// keeps (it adopts a running pod by its IP and start time).
		TrimPodStatus: true}
	if nodeIP != "" {
		cfg.NodeIP = func(int) string { return nodeIP }
	}
	if port != 0 {
		api.Addr = net.JoinHostPort(address, fmt.Sprint(port))
		cfg.API = &api
	}
	var a interface{ Run(context.Context) error }
	if shards > 0 {
		if identity == "" {
			if identity, err = os.Hostname(); err != nil {
				return fmt.Errorf("--identity: %w", err)
			}
		}
		a, err = virtualnode.NewSharded(virtualnode.ShardedConfig{Agent: cfg, Identity: identity, Shards: shards})
	} else {
		a, err = virtualnode.New(cfg)
	}
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	if profiling != "" {
		stopProfiling, err := serveProfiles(profiling)
		if err != nil {
			return fmt.Errorf("--profiling-address: %w", err)
		}
		defer stopProfiling()
	}
	if err := a.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// serveProfiles serves the Go runtime's profiles on addr until stopped.
func serveProfiles(addr string) (stop func(), err error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return func() { _ = srv.Close() }, nil
}
