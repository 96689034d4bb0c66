// Command demo is the README's main command (make demo): it starts a real
// kube-apiserver in-process, runs nodekit's reference agent against it as a
// node identity on the CRI simulator, creates a few pods that exercise the
// whole kubelet loop, and prints a live table of what the control plane
// sees, for about a minute or until Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/nodekit/nodekit/examples/kubelet/agent"
	"github.com/nodekit/nodekit/internal/crisim"
	"github.com/nodekit/nodekit/syncloop"
	"github.com/nodekit/nodekit/test/apiserver"
)

const node = "demo-node"

func main() {
	duration := flag.Duration("duration", 70*time.Second, "how long to run")
	flag.Parse()
	if err := run(*duration); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(duration time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Println("starting etcd and kube-apiserver in-process ...")
	t0 := time.Now()
	srv, err := apiserver.Start()
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Printf("kube-apiserver ready in %s\n", time.Since(t0).Round(time.Millisecond))
	admin := srv.AdminClient()
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}

	// A real HTTP server the web pod's readiness probe hits.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	web := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }), ReadHeaderTimeout: time.Second}
	go func() { _ = web.Serve(ln) }()
	defer web.Close()

	manifests, err := os.MkdirTemp("", "nodekit-demo-manifests-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(manifests)
	if err := os.WriteFile(filepath.Join(manifests, "static.yaml"), []byte(staticPod), 0o644); err != nil {
		return err
	}

	sim := crisim.New(crisim.Config{})
	a, err := agent.New(ctx, agent.Options{NodeName: node, Kube: srv.NodeConfig(node), PodManifestPath: manifests,
		Sim: sim, HTTPAddr: "127.0.0.1:0", EvictionHard: "memory.available<500Mi", MemoryCapacity: 4 << 30})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()

	port := ln.Addr().(*net.TCPAddr).Port
	for _, p := range demoPods(port) {
		if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			cancel()
			return err
		}
	}
	err = watchTable(ctx, admin, sim, duration, time.Now())
	cancel()
	if rerr := <-done; rerr != nil && err == nil {
		err = rerr
	}
	fmt.Println("agent stopped cleanly; shutting down kube-apiserver")
	return err
}

func demoPods(port int) []*v1.Pod {
	pod := func(name string, ann map[string]string, policy v1.RestartPolicy, c v1.Container) *v1.Pod {
		c.Image = "registry.example.com/busybox:1.37"
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann},
			Spec: v1.PodSpec{NodeName: node, RestartPolicy: policy, Containers: []v1.Container{c}}}
	}
	guaranteed := v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")}}
	webC := v1.Container{Name: "web", Resources: guaranteed,
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromInt32(int32(port)), Path: "/"}}, PeriodSeconds: 2},
		LivenessProbe:  &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/healthy"}}}, PeriodSeconds: 2, FailureThreshold: 2}}
	return []*v1.Pod{
		pod("web", nil, v1.RestartPolicyAlways, webC),
		pod("crasher", map[string]string{agent.AnnotationSimPrefix + "app": "exit-after=2s exit-code=1"}, v1.RestartPolicyAlways,
			v1.Container{Name: "app", Resources: guaranteed}),
		pod("job", map[string]string{agent.AnnotationSimPrefix + "work": "exit-after=6s exit-code=0"}, v1.RestartPolicyNever,
			v1.Container{Name: "work", Resources: guaranteed}),
		pod("besteffort", nil, v1.RestartPolicyAlways, v1.Container{Name: "hog"}),
	}
}

const staticPod = `apiVersion: v1
kind: Pod
metadata:
  name: static-web
  namespace: default
spec:
  containers:
  - name: web
    image: registry.example.com/busybox:1.37
`

// script is what the demo does to the simulated machine, by second.
func script(ctx context.Context, admin kubernetes.Interface, sim *crisim.Sim, elapsed time.Duration, done map[string]bool) string {
	step := func(name string, at time.Duration, f func() string) string {
		if elapsed < at || done[name] {
			return ""
		}
		done[name] = true
		return f()
	}
	msgs := []string{
		step("liveness", 25*time.Second, func() string {
			sim.ScriptExec(crisim.Match{Pod: "web", Container: "web"}, []string{"cat", "/healthy"}, crisim.ExecResult{ExitCode: 1, Stderr: "no such file"})
			return "t=25s: the web container's liveness exec now fails → restart"
		}),
		step("liveness-fix", 32*time.Second, func() string {
			sim.ScriptExec(crisim.Match{Pod: "web", Container: "web"}, []string{"cat", "/healthy"}, crisim.ExecResult{})
			return "t=32s: liveness healthy again"
		}),
		step("pressure", 38*time.Second, func() string {
			p, err := admin.CoreV1().Pods("default").Get(ctx, "besteffort", metav1.GetOptions{})
			if err != nil || len(p.Status.ContainerStatuses) == 0 {
				return "t=38s: besteffort pod not running yet"
			}
			id := p.Status.ContainerStatuses[0].ContainerID
			id = id[strings.Index(id, "://")+3:]
			_ = sim.SetContainerStats(id, crisim.ContainerUsage{MemoryWorkingSetBytes: 3900 << 20, MemoryUsageBytes: 3900 << 20})
			return "t=38s: the BestEffort pod now uses 3.8Gi of 4Gi → memory pressure → eviction"
		}),
		step("delete", 50*time.Second, func() string {
			_ = admin.CoreV1().Pods("default").Delete(ctx, "job", metav1.DeleteOptions{})
			return "t=50s: kubectl delete pod job → the pod object disappears"
		}),
	}
	return strings.Join(nonEmpty(msgs), "\n")
}

func nonEmpty(s []string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

func watchTable(ctx context.Context, admin kubernetes.Interface, sim *crisim.Sim, duration time.Duration, start time.Time) error {
	done := map[string]bool{}
	var log []string
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		elapsed := time.Since(start)
		if m := script(ctx, admin, sim, elapsed, done); m != "" {
			log = append(log, m)
		}
		fmt.Print("\033[H\033[2J")
		fmt.Printf("nodekit reference agent on the CRI simulator — t=%s of %s (Ctrl-C to stop)\n\n", elapsed.Round(time.Second), duration)
		printNode(ctx, admin)
		printPods(ctx, admin)
		printEvents(ctx, admin)
		if len(log) > 0 {
			fmt.Println("\nSCRIPT\n" + strings.Join(log, "\n"))
		}
		if elapsed >= duration {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func printNode(ctx context.Context, admin kubernetes.Interface) {
	n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		fmt.Printf("NODE %s: %v\n\n", node, err)
		return
	}
	var conds []string
	for _, c := range n.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	renew := "-"
	if l, err := admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, node, metav1.GetOptions{}); err == nil && l.Spec.RenewTime != nil {
		renew = fmt.Sprintf("%s (%s ago)", l.Spec.RenewTime.Format("15:04:05"), time.Since(l.Spec.RenewTime.Time).Round(time.Second))
	}
	fmt.Printf("NODE %s  %s\n  capacity cpu=%s memory=%s pods=%s  runtime %s\n  lease renewed %s\n\n", n.Name, strings.Join(conds, " "),
		n.Status.Capacity.Cpu(), n.Status.Capacity.Memory(), n.Status.Capacity.Pods(), n.Status.NodeInfo.ContainerRuntimeVersion, renew)
}

func printPods(ctx context.Context, admin kubernetes.Interface) {
	pods, err := admin.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Println("PODS:", err)
		return
	}
	fmt.Printf("%-22s %-10s %-6s %-9s %-11s %s\n", "POD", "PHASE", "READY", "RESTARTS", "IP", "STATE")
	for _, p := range pods.Items {
		ready, total, restarts, state := 0, len(p.Spec.Containers), int32(0), ""
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Ready {
				ready++
			}
			restarts += cs.RestartCount
			switch {
			case cs.State.Waiting != nil:
				state = cs.State.Waiting.Reason
			case cs.State.Terminated != nil:
				state = cs.State.Terminated.Reason
			case cs.State.Running != nil:
				state = "Running"
			}
		}
		if p.Status.Reason != "" {
			state = p.Status.Reason
		}
		name := p.Name
		if _, ok := p.Annotations[syncloop.ConfigMirrorAnnotationKey]; ok {
			name += " (mirror)"
		}
		fmt.Printf("%-22s %-10s %d/%-4d %-9d %-11s %s\n", name, p.Status.Phase, ready, total, restarts, p.Status.PodIP, state)
	}
}

func printEvents(ctx context.Context, admin kubernetes.Interface) {
	evs, err := admin.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil || len(evs.Items) == 0 {
		return
	}
	items := evs.Items
	if len(items) > 8 {
		items = items[len(items)-8:]
	}
	fmt.Println("\nRECENT EVENTS")
	for _, e := range items {
		fmt.Printf("  %-8s %-26s %-18s %s\n", e.Type, e.Reason, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name, trim(e.Message, 70))
	}
}

func trim(s string, n int) string {
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
