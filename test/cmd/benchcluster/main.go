// Command benchcluster measures node agents side by side on a real cluster
// (issue 21): the reference agent against the upstream kubelet on the
// conformance cluster of ../shared/conformance, and examples/virtualnodes
// against KWOK on one kube-apiserver. hack/bench-cluster.sh (make
// bench-cluster) drives it; the subcommands are:
//
//	proxy   counting proxies for one agent: HTTPS to the API server (with the
//	        node's credentials) and gRPC to the CRI runtime; serves /stats
//	agent   the pod workload against the agent behind a proxy; writes JSON
//	vnodes  starts a many-node agent (virtualnodes or KWOK) behind an
//	        in-process proxy, registers nodes and pods, measures; writes JSON
//	report  turns the JSON files into the README's Markdown tables
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchcluster proxy|agent|vnodes|report [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "proxy":
		err = runProxy(ctx, args)
	case "agent":
		err = runAgent(ctx, args)
	case "vnodes":
		err = runVNodes(ctx, args)
	case "report":
		err = runReport(args)
	default:
		err = fmt.Errorf("unknown subcommand %q", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcluster:", err)
		os.Exit(1)
	}
}

func runProxy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:16443", "API proxy address")
	upstream := fs.String("upstream-kubeconfig", "", "kubeconfig whose server and credentials the proxy uses (read at the first request)")
	kubeconfigOut := fs.String("kubeconfig-out", "", "where to write the agent's kubeconfig (the proxy, no credentials)")
	criListen := fs.String("cri-listen", "", "unix socket of the CRI proxy")
	criUpstream := fs.String("cri-upstream", "", "the runtime's unix socket")
	stats := fs.String("stats", "127.0.0.1:16444", "address serving GET /stats")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p, err := startProxies(ctx, *listen, *upstream, *criListen, *criUpstream, *stats)
	if err != nil {
		return err
	}
	defer p.stop()
	if err := writeKubeconfig(*kubeconfigOut, "https://"+p.apiAddr, p.caPEM); err != nil {
		return err
	}
	fmt.Println("proxy up: API", p.apiAddr, "stats", p.statsURL)
	<-ctx.Done()
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
