// Command demo is the README's first command (make demo): it starts a real
// kube-apiserver in-process with the two controllers pods depend on, runs
// nodekit's reference agent against it as a node identity on the CRI
// simulator, creates a few pods that exercise the whole kubelet loop, and
// prints a live table of what the control plane sees, for about a minute or
// until Ctrl-C.
//
// With --check it prints a plain timeline instead, stops as soon as the five
// promised outcomes were seen through the API (a liveness restart, an
// eviction under memory pressure with MemoryPressure=True, a completed job
// pod, a deletion, a mirror pod for the static pod) and exits 1 if any is
// missing when --duration runs out. CI runs it (make demo-check).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/examples/kubelet/agent"
	"github.com/nodekit/nodekit/test/apiserver"
)

const node = "demo-node"

func main() {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "demo: nodekit's reference agent on an in-process control plane and the CRI simulator.\n\nUsage: nodekit-demo [--duration 70s] [--check]")
		fs.PrintDefaults()
	}
	duration := fs.Duration("duration", 0, "how long to run (default 70s; with --check, the deadline for all outcomes: 150s)")
	check := fs.Bool("check", false, "non-interactive: print a timeline, stop once every promised outcome was seen, exit 1 if one is missing")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		os.Exit(2)
	}
	if *duration == 0 {
		*duration = 70 * time.Second
		if *check {
			*duration = 150 * time.Second
		}
	}
	if err := run(*duration, *check); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(duration time.Duration, check bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := os.MkdirTemp("", "nodekit-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)

	fmt.Println("starting etcd, kube-apiserver and the root CA and service account controllers in-process ...")
	t0 := time.Now()
	srv, err := apiserver.Start()
	if err != nil {
		return err
	}
	defer srv.Stop()
	stopControllers, err := srv.StartControllers(ctx)
	if err != nil {
		return err
	}
	defer stopControllers()
	fmt.Printf("control plane ready in %s\n", time.Since(t0).Round(time.Millisecond))
	admin := srv.AdminClient()
	if err := waitPublished(ctx, admin, "default"); err != nil {
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

	manifests := filepath.Join(root, "manifests")
	if err := os.Mkdir(manifests, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(manifests, "static.yaml"), []byte(staticPod), 0o644); err != nil {
		return err
	}

	sim := crisim.New(crisim.Config{})
	a, err := agent.New(ctx, agent.Options{NodeName: node, Kube: srv.NodeConfig(node), PodManifestPath: manifests,
		StateDir: filepath.Join(root, "agent"), Sim: sim, HealthzAddr: "127.0.0.1:0",
		EvictionHard: "memory.available<500Mi", MemoryCapacity: 4 << 30})
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
			<-done
			return err
		}
	}
	d := &demo{admin: admin, sim: sim, start: time.Now(), check: check}
	err = d.watch(ctx, duration)
	cancel()
	if rerr := <-done; rerr != nil && err == nil {
		err = fmt.Errorf("agent: %w", rerr)
	}
	fmt.Println("agent stopped cleanly; shutting down the control plane")
	return err
}

// waitPublished waits until the root CA publisher and the service account
// controller have served namespace ns, so the first pods do not start with
// a FailedMount event.
func waitPublished(ctx context.Context, admin kubernetes.Interface, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		_, errCM := admin.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		_, errSA := admin.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		if errCM == nil && errSA == nil {
			return nil
		}
		for _, err := range []error{errCM, errSA} {
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the root CA ConfigMap and default ServiceAccount of namespace %q did not appear: %w", ns, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
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
		pod("crasher", map[string]string{crisim.AnnotationScriptPrefix + "app": "exit-after=2s exit-code=1"}, v1.RestartPolicyAlways,
			v1.Container{Name: "app", Resources: guaranteed}),
		pod("job", map[string]string{crisim.AnnotationScriptPrefix + "work": "exit-after=6s exit-code=0"}, v1.RestartPolicyNever,
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
