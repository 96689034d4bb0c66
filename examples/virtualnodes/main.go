// Command virtualnodes registers many virtual nodes against a cluster and
// runs the pods bound to them on a simulated provider, in one process (see
// package vnodes and README.md).
//
//	virtualnodes --kubeconfig ~/.kube/config --nodes 1000 --node-prefix vn-
//
// It uses one credential for every node: give it a role that may create and
// patch nodes and node status, renew leases in kube-node-lease, list and watch
// pods, patch pod status and delete pods.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/examples/virtualnodes/vnodes"
	"github.com/nodekit/nodekit/lease"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "virtualnodes:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("virtualnodes", flag.ContinueOnError)
	var (
		kubeconfig, prefix, memory string
		nodes, cpu, pods           int
		qps                        float64
		readyDelay, stopDelay      time.Duration
	)
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default: in-cluster config or $KUBECONFIG)")
	fs.IntVar(&nodes, "nodes", 10, "number of virtual nodes")
	fs.StringVar(&prefix, "node-prefix", "vnode-", "node names are this prefix and a number")
	fs.IntVar(&cpu, "cpu", vnodes.DefaultCPU, "cpu capacity of each node, in cores")
	fs.StringVar(&memory, "memory", vnodes.DefaultMemory, "memory capacity of each node")
	fs.IntVar(&pods, "pods", vnodes.DefaultPods, "pod capacity of each node")
	fs.DurationVar(&readyDelay, "ready-delay", time.Second, "time from a pod's creation to Running and Ready")
	fs.DurationVar(&stopDelay, "stop-delay", 0, "time containers take to stop after SIGTERM (cut at the grace period)")
	fs.Float64Var(&qps, "qps", 200, "API requests per second for pod traffic (heartbeats are not limited)")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.Var(klogFlags.Lookup("v").Value, "v", "log verbosity")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	mem, err := resource.ParseQuantity(memory)
	if err != nil {
		return fmt.Errorf("--memory: %w", err)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	restCfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	restCfg.QPS, restCfg.Burst = float32(qps), int(2*qps)
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	heartbeat, err := kubernetes.NewForConfig(lease.HeartbeatRESTConfig(restCfg, 10*time.Second))
	if err != nil {
		return err
	}
	sim, err := vnodes.NewSimulated(vnodes.SimulatedConfig{ReadyDelay: readyDelay, StopDelay: stopDelay})
	if err != nil {
		return err
	}
	defer sim.Close()
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	a, err := vnodes.New(vnodes.Config{Client: client, HeartbeatClient: heartbeat, Nodes: names,
		CPU: cpu, Memory: mem, Pods: pods, Provider: sim})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	if err := a.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
