package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// VNodesResult is what one many-node agent's run measured.
type VNodesResult struct {
	Agent   string    `json:"agent"`
	Version string    `json:"version"`
	Date    time.Time `json:"date"`
	Nodes   int       `json:"nodes"`
	Pods    int       `json:"pods"`

	NodesReady  float64 `json:"nodesReadySeconds"`  // process start → every node Ready
	PodsCreated float64 `json:"podsCreatedSeconds"` // first pod create → last create returned
	PodsRunning float64 `json:"podsRunningSeconds"` // first pod create → every pod Running

	Ramp          usage    `json:"ramp"`   // process start → every pod Running
	Steady        usage    `json:"steady"` // steady state
	PeakRSSBytes  int64    `json:"peakRssBytes"`
	SteadySeconds float64  `json:"steadySeconds"`
	SteadyAPI     Counters `json:"steadyApi"`
	RampAPI       Counters `json:"rampApi"`

	Renewals     int     `json:"renewals"`     // lease renewals seen during steady state
	LateRenewals int     `json:"lateRenewals"` // more than ¼ duration after due
	WorstGap     float64 `json:"worstGapSeconds"`

	// With --timed-delete: first delete (the pods' own grace period) →
	// every pod gone from the API.
	PodsDeleted float64 `json:"podsDeletedSeconds,omitempty"`
	// First delete → last delete request returned (the deletions asked
	// for; the agent's work trails them).
	PodsDeleteRequested float64 `json:"podsDeleteRequestedSeconds,omitempty"`
	// Lease renewals from the start to the steady state, and after it
	// through the timed deletion.
	RampRenewals     int     `json:"rampRenewals"`
	RampLateRenewals int     `json:"rampLateRenewals"`
	RampWorstGap     float64 `json:"rampWorstGapSeconds"`
	DeleteRenewals   int     `json:"deleteRenewals,omitempty"`
	DeleteLate       int     `json:"deleteLateRenewals,omitempty"`
}

func runVNodes(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("vnodes", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "admin kubeconfig of the API server")
	name := fs.String("name", "", "the agent's name in the report")
	version := fs.String("version", "", "the agent's version in the report")
	command := fs.String("command", "", "the agent's command line (bash); $KUBECONFIG is the proxy's kubeconfig")
	createNodes := fs.Bool("create-nodes", false, "create the Node objects (KWOK manages nodes it is given; virtualnodes registers its own)")
	prefix := fs.String("node-prefix", "bn-", "node names are this prefix and a number")
	selector := fs.String("node-selector", "", "label selector of the agent's nodes")
	nodes := fs.Int("nodes", 1000, "nodes")
	pods := fs.Int("pods", 10000, "pods, spread evenly over the nodes")
	steady := fs.Duration("steady", 3*time.Minute, "steady state")
	settle := fs.Duration("settle", 30*time.Second, "wait after every pod is Running before steady state")
	oneNode := fs.Bool("pods-on-one-node", false, "bind every pod to the first node (KWOK's CI benchmark shape) instead of spreading them")
	createParallel := fs.Int("create-parallel", 32, "pod creations (and deletions) in flight")
	timedDelete := fs.Bool("timed-delete", false, "after the steady state, delete the pods with their grace period and time it until every one is gone")
	workDir := fs.String("work-dir", os.TempDir(), "where the proxy's kubeconfig and the agent's log go")
	direct := fs.Bool("direct", false, "give the agent the API server's own kubeconfig instead of the counting proxy's (no request counts; on a small machine the proxy's second TLS hop takes CPU from the API server)")
	out := fs.String("out", "", "JSON result file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cs, err := adminClient(*kubeconfig, 1000)
	if err != nil {
		return err
	}
	p, err := startProxies(ctx, "127.0.0.1:0", *kubeconfig, "", "", "")
	if err != nil {
		return err
	}
	defer p.stop()
	proxyKubeconfig := filepath.Join(*workDir, *name+"-proxy.kubeconfig")
	if err := writeKubeconfig(proxyKubeconfig, "https://"+p.apiAddr, p.caPEM); err != nil {
		return err
	}
	if *direct {
		proxyKubeconfig = *kubeconfig
	}
	res := VNodesResult{Agent: *name, Version: *version, Date: time.Now().UTC(), Nodes: *nodes, Pods: *pods, SteadySeconds: steady.Seconds()}
	ns := "bench-" + *name
	if err := ensureNamespace(ctx, cs, ns); err != nil {
		return err
	}
	lw := newLeaseWatch(ctx, cs, *prefix)
	defer lw.stop()
	nw := newNodeWatch(ctx, cs, *selector)
	defer nw.stop()
	pw := newPodWatch(ctx, cs, ns)
	defer pw.stop()

	logFile, err := os.Create(filepath.Join(*workDir, *name+".log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command("bash", "-c", "exec "+*command)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+proxyKubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t0 := time.Now()
	a0 := p.c.snapshot()
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	var exitErr error
	go func() {
		exitErr = cmd.Wait()
		close(exited)
	}()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}()
	smp := &sampler{pid: cmd.Process.Pid}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go smp.run(sctx, time.Second)

	nodeNames := make([]string, *nodes)
	for i := range nodeNames {
		nodeNames[i] = fmt.Sprintf("%s%d", *prefix, i)
	}
	if *createNodes {
		if err := parallel(ctx, *nodes, 16, func(i int) error {
			_, err := cs.CoreV1().Nodes().Create(ctx, kwokNode(i, nodeNames[i]), metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("create nodes: %w", err)
		}
	}
	if err := nw.waitReady(ctx, 5*time.Minute, *nodes, exited, &exitErr); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	res.NodesReady = time.Since(t0).Seconds()
	fmt.Printf("%s: %d nodes Ready %.1fs after the start\n", *name, *nodes, res.NodesReady)

	tp := time.Now()
	if err := parallel(ctx, *pods, *createParallel, func(i int) error {
		node := nodeNames[i%*nodes]
		if *oneNode {
			node = nodeNames[0]
		}
		_, err := cs.CoreV1().Pods(ns).Create(ctx, vnodePod(i, node), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%w (left by an earlier run? delete namespace %s)", err, ns)
		}
		return err
	}); err != nil {
		return fmt.Errorf("create pods: %w", err)
	}
	res.PodsCreated = time.Since(tp).Seconds()
	if err := pw.waitAll(ctx, 15*time.Minute, func(p *podTimes) bool { return !p.running.IsZero() }, *pods); err != nil {
		return fmt.Errorf("pods: %w", err)
	}
	res.PodsRunning = time.Since(tp).Seconds()
	tr := time.Now()
	res.Ramp = smp.usage(t0, tr, 5*time.Second)
	res.RampAPI = p.c.snapshot().Sub(a0)
	fmt.Printf("%s: %d pods created in %.1fs, all Running %.1fs after the first create\n", *name, *pods, res.PodsCreated, res.PodsRunning)

	if err := sleepCtx(ctx, *settle); err != nil {
		return err
	}
	s0, ts0 := p.c.snapshot(), time.Now()
	res.RampRenewals, res.RampLateRenewals, res.RampWorstGap = lw.lateness()
	lw.reset()
	if err := sleepCtx(ctx, *steady); err != nil {
		return err
	}
	ts1 := time.Now()
	res.SteadyAPI = p.c.snapshot().Sub(s0)
	res.Steady = smp.usage(ts0, ts1, 5*time.Second)
	res.Renewals, res.LateRenewals, res.WorstGap = lw.lateness()
	if hwm, err := highWaterMark(cmd.Process.Pid); err == nil {
		res.PeakRSSBytes = hwm
	}
	fmt.Printf("%s: start → steady: %d renewals (%d late, worst gap %.1fs)\n", *name, res.RampRenewals, res.RampLateRenewals, res.RampWorstGap)
	fmt.Printf("%s: steady %s: CPU %.3f cores, RSS %.0f MiB, %.1f API requests/s, %d renewals (%d late, worst gap %.1fs)\n",
		*name, *steady, res.Steady.CPUCores, float64(res.Steady.RSSBytes)/(1<<20), float64(res.SteadyAPI.APIRequests)/steady.Seconds(),
		res.Renewals, res.LateRenewals, res.WorstGap)
	if *timedDelete {
		lw.reset()
		td := time.Now()
		if err := parallel(ctx, *pods, *createParallel, func(i int) error {
			return ignoreNotFound(cs.CoreV1().Pods(ns).Delete(ctx, fmt.Sprintf("p-%05d", i), metav1.DeleteOptions{}))
		}); err != nil {
			return fmt.Errorf("delete pods: %w", err)
		}
		res.PodsDeleteRequested = time.Since(td).Seconds()
		if err := pw.waitAll(ctx, 10*time.Minute, func(p *podTimes) bool { return !p.gone.IsZero() }, *pods); err != nil {
			return fmt.Errorf("pods not gone: %w", err)
		}
		res.PodsDeleted = time.Since(td).Seconds()
		res.DeleteRenewals, res.DeleteLate, _ = lw.lateness()
		fmt.Printf("%s: %d pods deleted (the default 30s grace period; the requests took %.1fs) and gone %.1fs after the first delete; %d renewals meanwhile (%d late)\n",
			*name, *pods, res.PodsDeleteRequested, res.PodsDeleted, res.DeleteRenewals, res.DeleteLate)
	}
	if err := writeJSON(*out, res); err != nil {
		return err
	}

	// Clean up for the next agent: pods at once (one by one: a collection
	// delete of 10,000 pods outlives the API server's request timeout),
	// then the agent, its nodes and leases.
	zero := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	if err := parallel(ctx, *pods, 32, func(i int) error {
		return ignoreNotFound(cs.CoreV1().Pods(ns).Delete(ctx, fmt.Sprintf("p-%05d", i), zero))
	}); err != nil {
		return err
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
	}
	if err := parallel(ctx, *nodes, 16, func(i int) error {
		if err := ignoreNotFound(cs.CoreV1().Nodes().Delete(ctx, nodeNames[i], metav1.DeleteOptions{})); err != nil {
			return err
		}
		return ignoreNotFound(cs.CoordinationV1().Leases(v1.NamespaceNodeLease).Delete(ctx, nodeNames[i], metav1.DeleteOptions{}))
	}); err != nil {
		return err
	}
	if err := ignoreNotFound(cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})); err != nil {
		return err
	}
	// Wait for the namespace controller to finish (the pods' events go
	// with the namespace, tens of thousands for some agents): the next
	// agent's figures must not carry this one's cleanup on a shared
	// two-core machine.
	for deadline := time.Now().Add(5 * time.Minute); ; {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("namespace %s still there 5m after its deletion (err: %v)", ns, err)
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return err
		}
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// kwokNode is a Node for KWOK to manage (its documented annotation), with
// its own pod CIDR as the node IPAM controller would give it (KWOK hands
// out pod IPs from it; its default pool has 254 addresses).
func kwokNode(i int, name string) *v1.Node {
	return &v1.Node{
		Spec: v1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256)},
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
		Status: v1.NodeStatus{
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("256Gi"), v1.ResourcePods: resource.MustParse("110")},
			Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("256Gi"), v1.ResourcePods: resource.MustParse("110")},
		},
	}
}

func vnodePod(i int, node string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i)},
		Spec: v1.PodSpec{
			NodeName:                     node,
			AutomountServiceAccountToken: ptr.To(false),
			Tolerations:                  []v1.Toleration{{Operator: v1.TolerationOpExists}},
			Containers:                   []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
}

// nodeWatch counts Ready nodes.
type nodeWatch struct {
	mu      sync.Mutex
	ready   map[string]bool
	changed chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}
}

func newNodeWatch(ctx context.Context, cs kubernetes.Interface, selector string) *nodeWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &nodeWatch{ready: map[string]bool{}, changed: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		watchLoop(ctx, func(ctx context.Context, rv string) (watch.Interface, error) {
			return cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: rv})
		}, func(_ watch.EventType, obj runtime.Object) {
			n, ok := obj.(*v1.Node)
			if !ok {
				return
			}
			ready := false
			for _, c := range n.Status.Conditions {
				ready = ready || (c.Type == v1.NodeReady && c.Status == v1.ConditionTrue)
			}
			w.mu.Lock()
			w.ready[n.Name] = ready
			w.mu.Unlock()
			select {
			case w.changed <- struct{}{}:
			default:
			}
		})
	}()
	return w
}

func (w *nodeWatch) waitReady(ctx context.Context, timeout time.Duration, n int, exited <-chan struct{}, exitErr *error) error {
	err := waitCount(ctx, timeout, w.changed, exited, n, "nodes Ready", func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		k := 0
		for _, r := range w.ready {
			if r {
				k++
			}
		}
		return k
	})
	if errors.Is(err, errAborted) {
		return fmt.Errorf("the agent exited: %v", *exitErr)
	}
	return err
}

func (w *nodeWatch) stop() {
	w.cancel()
	<-w.done
}

// leaseWatch records the gaps between consecutive renewals of the leases
// whose names start with prefix. A renewal is late when it comes more than a
// quarter of the lease duration after it was due, due being a quarter of the
// duration after the previous renewal (the kubelet's renew interval, also
// KWOK's).
type leaseWatch struct {
	mu       sync.Mutex
	last     map[string]time.Time
	renewals int
	late     int
	worst    time.Duration
	cancel   context.CancelFunc
	done     chan struct{}
}

func newLeaseWatch(ctx context.Context, cs kubernetes.Interface, prefix string) *leaseWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &leaseWatch{last: map[string]time.Time{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		watchLoop(ctx, func(ctx context.Context, rv string) (watch.Interface, error) {
			return cs.CoordinationV1().Leases(v1.NamespaceNodeLease).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		}, func(_ watch.EventType, obj runtime.Object) {
			if l, ok := obj.(*coordinationv1.Lease); ok && strings.HasPrefix(l.Name, prefix) {
				w.observe(l)
			}
		})
	}()
	return w
}

func (w *leaseWatch) observe(l *coordinationv1.Lease) {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return
	}
	renewed := l.Spec.RenewTime.Time
	d := time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	w.mu.Lock()
	defer w.mu.Unlock()
	prev, ok := w.last[l.Name]
	w.last[l.Name] = renewed
	if !ok || !renewed.After(prev) {
		return
	}
	gap := renewed.Sub(prev)
	w.renewals++
	w.worst = max(w.worst, gap)
	if gap > d/4+d/4 {
		w.late++
	}
}

// reset forgets the counts (not the last renewals): steady state starts.
func (w *leaseWatch) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.renewals, w.late, w.worst = 0, 0, 0
}

func (w *leaseWatch) lateness() (renewals, late int, worst float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.renewals, w.late, w.worst.Seconds()
}

func (w *leaseWatch) stop() {
	w.cancel()
	<-w.done
}
