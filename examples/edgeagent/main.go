// Command edgeagent is an edge appliance's node agent made of three
// blocks: nodestatus registers the node and reports it, lease heartbeats,
// and prober watches the appliance's workload through the CRI runtime's
// exec; the node is Ready only while the workload's liveness probe passes.
// It runs no pods of the cluster.
//
//	go run ./examples/edgeagent [--kubeconfig FILE] [--node-name NAME] [--duration 40s]
//
// Without --kubeconfig the API server is an in-memory fake and the agent
// prints each change of the node's Ready condition and each lease renewal.
// The runtime is the in-process CRI simulator, whose workload container
// fails its health check from the 20th second on.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/lease"
	"github.com/nodekit/nodekit/nodestatus"
	"github.com/nodekit/nodekit/prober"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "join this cluster (default: an in-memory API server)")
	node := flag.String("node-name", "edge-1", "the node's name")
	duration := flag.Duration("duration", 40*time.Second, "stop after this long (0: until Ctrl-C)")
	flag.Parse()
	if err := run(*kubeconfig, *node, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "edgeagent:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, node string, duration time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	var client kubernetes.Interface = fake.NewClientset()
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return err
		}
		if client, err = kubernetes.NewForConfig(cfg); err != nil {
			return err
		}
	}

	// The appliance's workload, in a simulated runtime: its health check
	// passes for 20 s, then fails.
	dir, err := os.MkdirTemp("", "edgeagent-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sim := crisim.New(crisim.Config{Images: []crisim.Image{{Ref: "registry.example.com/sensor:1"}}})
	endpoint, stopSim, err := sim.ListenAndServe(filepath.Join(dir, "cri.sock"))
	if err != nil {
		return err
	}
	defer stopSim()
	rt, err := remote.NewRemoteRuntimeService(ctx, endpoint, 10*time.Second, nil, false)
	if err != nil {
		return err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	pod, err := startWorkload(ctx, rt)
	if err != nil {
		return err
	}
	time.AfterFunc(20*time.Second, func() { // until then every exec succeeds
		sim.ScriptExec(crisim.Match{Container: "sensor"}, []string{"/health"}, crisim.ExecResult{ExitCode: 1, Stdout: "sensor offline"})
	})

	// The blocks.
	var status *nodestatus.Controller
	probes, err := prober.New(prober.Config{Runner: rt, Sink: func(t prober.ProbeType, u prober.Update) {
		fmt.Printf("%s probe of the workload: %s\n", t, u.Result)
		status.Trigger() // report the node at once
	}})
	if err != nil {
		return err
	}
	workloadErr := func() error {
		if r, ok := probes.Result(prober.Liveness, pod.id); ok && r == prober.Failure {
			return errors.New("the sensor workload fails its health check")
		}
		return nil
	}
	ready, err := nodestatus.ReadyCondition(nodestatus.ReadyConfig{RuntimeErrors: workloadErr})
	if err != nil {
		return err
	}
	leases, err := lease.New(lease.Config{Client: clientset.Wrap(client), NodeName: node})
	if err != nil {
		return err
	}
	if status, err = nodestatus.New(nodestatus.Config{Client: clientset.Wrap(client), NodeName: node,
		Labels:       map[string]string{"node-role.example.com/edge": ""},
		Setters:      []nodestatus.Setter{capacity, nodestatus.GoRuntime(), ready, printReady},
		OnRegistered: func(n *v1.Node) { leases.SetNodeUID(n.Name, n.UID) }}); err != nil {
		return err
	}
	if err := probes.AddPod(pod.pod); err != nil {
		return err
	}
	probes.UpdatePodStatus(ctx, pod.pod, &pod.status)

	errs := make(chan error, 3)
	for _, r := range []func(context.Context) error{status.Run, leases.Run, probes.Run} {
		go func() { errs <- r(ctx) }()
	}
	var runErr error
	for range 3 {
		runErr = errors.Join(runErr, <-errs)
	}
	if l, err := client.CoordinationV1().Leases(lease.DefaultNamespace).Get(context.Background(), node, metav1.GetOptions{}); err == nil {
		fmt.Println("lease last renewed", l.Spec.RenewTime.Format(time.TimeOnly), "by", *l.Spec.HolderIdentity)
	}
	return runErr
}

// capacity reports what the appliance offers (the Ready condition needs
// the node's capacity).
func capacity(_ context.Context, _ time.Time, n *v1.Node) error {
	n.Status.Capacity = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"),
		v1.ResourcePods: resource.MustParse("0"), v1.ResourceEphemeralStorage: resource.MustParse("8Gi")}
	n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	return nil
}

// printReady prints the Ready condition when it changes.
func printReady(_ context.Context, now time.Time, n *v1.Node) error {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady && c.LastTransitionTime.Time.Equal(now) {
			fmt.Printf("%s node %s Ready=%s %s\n", now.Format(time.TimeOnly), n.Name, c.Status, c.Message)
		}
	}
	return nil
}

type workload struct {
	pod    *v1.Pod
	status v1.PodStatus
	id     containerid.ID
}

// startWorkload runs the appliance's container through CRI and describes
// it as a pod with an exec liveness probe, as the prober needs it.
func startWorkload(ctx context.Context, rt interface {
	RunPodSandbox(context.Context, *runtimeapi.PodSandboxConfig, string) (string, error)
	CreateContainer(context.Context, string, *runtimeapi.ContainerConfig, *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(context.Context, string) error
}) (*workload, error) {
	sb := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "sensor", Namespace: "edge", Uid: "sensor-1"}}
	sbID, err := rt.RunPodSandbox(ctx, sb, "")
	if err != nil {
		return nil, err
	}
	id, err := rt.CreateContainer(ctx, sbID, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "sensor"},
		Image: &runtimeapi.ImageSpec{Image: "registry.example.com/sensor:1"}}, sb)
	if err != nil {
		return nil, err
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		return nil, err
	}
	w := &workload{id: containerid.ID{Type: "crisim", ID: id}}
	w.pod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sensor", Namespace: "edge", UID: "sensor-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "sensor", LivenessProbe: &v1.Probe{
			ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"/health"}}},
			PeriodSeconds: 5, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 2}}}}}
	w.status = v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "sensor",
		ContainerID: w.id.String(), State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Now()}}}}}
	return w, nil
}
