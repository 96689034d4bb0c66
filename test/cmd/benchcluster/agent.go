package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// AgentResult is what one agent's run of the pod workload measured.
type AgentResult struct {
	Agent   string    `json:"agent"`
	Version string    `json:"version"`
	Date    time.Time `json:"date"`
	Pods    int       `json:"pods"`

	// RatePerSecond is how fast the pods were created; 0: in a burst (10
	// calls at a time).
	RatePerSecond float64 `json:"ratePerSecond,omitempty"`
	// Latencies from the create (delete) call to the watch event, ms.
	Running     Pct     `json:"runningMs"`
	Ready       Pct     `json:"readyMs"`
	Gone        Pct     `json:"goneMs"`
	StartPhase  float64 `json:"startPhaseSeconds"` // first create → all Ready
	DeletePhase float64 `json:"deletePhaseSeconds"`
	// PeakRSSBytes is the process's high-water mark (VmHWM) at the end.
	PeakRSSBytes int64 `json:"peakRssBytes"`

	Start         usage   `json:"start"`  // the process during the start phase
	Steady        usage   `json:"steady"` // during steady state with every pod running
	Delete        usage   `json:"delete"`
	SteadySeconds float64 `json:"steadySeconds"`

	// SLI is the agent's own kubelet_pod_start_sli_duration_seconds after
	// the start phase (read from its /metrics through the API server's
	// node proxy; quantiles interpolated in the histogram's buckets as
	// Prometheus' histogram_quantile does), ms; SLICount its sample count.
	SLI      Pct `json:"sliMs"`
	SLICount int `json:"sliCount"`

	StartCounters  Counters `json:"startCounters"`  // during the start phase
	SteadyCounters Counters `json:"steadyCounters"` // during steady state
	DeleteCounters Counters `json:"deleteCounters"`
}

// Pct is a latency distribution in milliseconds.
type Pct struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// percentiles uses the nearest rank.
func percentiles(ds []time.Duration) Pct {
	if len(ds) == 0 {
		return Pct{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return Pct{P50: ms(rank(0.50)), P99: ms(rank(0.99)), Max: ms(s[len(s)-1])}
}

func runAgent(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "admin kubeconfig")
	name := fs.String("name", "", "the agent's name in the report")
	version := fs.String("version", "", "the agent's version in the report")
	statsURL := fs.String("stats", "http://127.0.0.1:16444/stats", "the proxy's stats URL")
	pidFile := fs.String("supervisor-pid-file", "", "pid file of the process whose child is the agent")
	pods := fs.Int("pods", 100, "pods to start")
	steady := fs.Duration("steady", 10*time.Minute, "steady state with every pod running")
	settle := fs.Duration("settle", 30*time.Second, "wait after the last pod is Ready before steady state")
	image := fs.String("image", "registry.k8s.io/e2e-test-images/agnhost:2.63.0", "the pods' image: agnhost (netexec serves the readiness probe, cat runs the liveness probe)")
	namespace := fs.String("namespace", "bench", "namespace of the pods")
	out := fs.String("out", "", "JSON result file")
	rate := fs.Float64("rate", 0, "pods created per second (clusterloader2's node-throughput shape: 5); 0 creates them 10 at a time")
	node := fs.String("node", "", "the node's name, to read the agent's pod start SLI from its /metrics; empty: not read")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cs, err := adminClient(*kubeconfig, 200)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(*pidFile)
	if err != nil {
		return err
	}
	sup, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return err
	}
	pid, err := childOf(sup, "sleep")
	if err != nil {
		return err
	}
	res := AgentResult{Agent: *name, Version: *version, Date: time.Now().UTC(), Pods: *pods, SteadySeconds: steady.Seconds(), RatePerSecond: *rate}
	smp := &sampler{pid: pid}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go smp.run(sctx, time.Second)
	counters := func() (Counters, error) { return fetchCounters(ctx, *statsURL) }

	ns := *namespace
	if err := ensureNamespace(ctx, cs, ns); err != nil {
		return err
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Data: map[string]string{"key": "value"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := waitFor(ctx, 2*time.Minute, func() bool {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	}); err != nil {
		return fmt.Errorf("default service account: %w", err)
	}

	w := newPodWatch(ctx, cs, ns)
	defer w.stop()

	// measure runs one phase of the workload and records its span, the
	// proxy's counters over it and the agent's usage.
	type phase struct {
		from, to time.Time
		counters Counters
	}
	measure := func(run func() error) (phase, error) {
		c0, err := counters()
		if err != nil {
			return phase{}, err
		}
		ph := phase{from: time.Now()}
		if err := run(); err != nil {
			return phase{}, err
		}
		ph.to = time.Now()
		c1, err := counters()
		if err != nil {
			return phase{}, err
		}
		ph.counters = c1.Sub(c0)
		return ph, nil
	}

	// burst makes one API call per pod (10 at a time), noting when each
	// was made, and waits until done holds for every pod: one phase.
	burst := func(what string, timeout time.Duration, rate float64, call func(i int) error, done func(*podTimes) bool) ([]time.Time, phase, error) {
		at := make([]time.Time, *pods)
		ph, err := measure(func() error {
			if err := paced(ctx, *pods, rate, func(i int) error {
				at[i] = time.Now()
				return call(i)
			}); err != nil {
				return err
			}
			if err := w.waitAll(ctx, timeout, done, *pods); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			return nil
		})
		return at, ph, err
	}

	// Start.
	created, start, err := burst("start", 10*time.Minute, *rate, func(i int) error {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, benchPod(i, *image), metav1.CreateOptions{})
		return err
	}, func(p *podTimes) bool { return !p.ready.IsZero() })
	if err != nil {
		return err
	}
	res.StartPhase = start.to.Sub(start.from).Seconds()
	var running, ready []time.Duration
	for i := range *pods {
		p := w.get(podName(i))
		running = append(running, p.running.Sub(created[i]))
		ready = append(ready, p.ready.Sub(created[i]))
	}
	res.Running, res.Ready = percentiles(running), percentiles(ready)
	res.StartCounters = start.counters
	fmt.Printf("%s: %d pods Ready in %.1fs (Running p50 %.0f ms p99 %.0f ms, Ready p50 %.0f ms p99 %.0f ms); %d API requests\n",
		*name, *pods, res.StartPhase, res.Running.P50, res.Running.P99, res.Ready.P50, res.Ready.P99, res.StartCounters.APIRequests)

	if *node != "" {
		// The watch that reports a pod started to the agent may lag the
		// harness's own: give it the settle time to count every pod.
		if err := waitFor(ctx, *settle, func() bool {
			res.SLI, res.SLICount, err = podStartSLI(ctx, cs, *node)
			return err == nil && res.SLICount >= *pods
		}); err != nil {
			fmt.Printf("%s: pod start SLI: %d of %d pods counted (%v)\n", *name, res.SLICount, *pods, err)
		}
		fmt.Printf("%s: pod start SLI p50 %.0f ms p99 %.0f ms (%d pods)\n", *name, res.SLI.P50, res.SLI.P99, res.SLICount)
	}

	// Steady state.
	if err := sleepCtx(ctx, *settle); err != nil {
		return err
	}
	steadyPhase, err := measure(func() error { return sleepCtx(ctx, *steady) })
	if err != nil {
		return err
	}
	res.SteadyCounters = steadyPhase.counters
	res.Start = smp.usage(start.from, start.to, 5*time.Second)
	res.Steady = smp.usage(steadyPhase.from, steadyPhase.to, 5*time.Second)
	if restarts := w.restarts(); restarts > 0 {
		fmt.Printf("%s: %d container restarts during the run\n", *name, restarts)
	}
	fmt.Printf("%s: steady %s: CPU %.3f cores, RSS %.0f MiB, %d API requests, %d CRI calls\n",
		*name, *steady, res.Steady.CPUCores, float64(res.Steady.RSSBytes)/(1<<20), res.SteadyCounters.APIRequests, res.SteadyCounters.CRICalls)

	// Deletion.
	deleted, del, err := burst("delete", 5*time.Minute, 0, func(i int) error {
		return cs.CoreV1().Pods(ns).Delete(ctx, podName(i), metav1.DeleteOptions{})
	}, func(p *podTimes) bool { return !p.gone.IsZero() })
	if err != nil {
		return err
	}
	res.DeletePhase = del.to.Sub(del.from).Seconds()
	res.DeleteCounters = del.counters
	res.Delete = smp.usage(del.from, del.to, 5*time.Second)
	var gone []time.Duration
	for i := range *pods {
		gone = append(gone, w.get(podName(i)).gone.Sub(deleted[i]))
	}
	res.Gone = percentiles(gone)
	if hwm, err := highWaterMark(pid); err == nil {
		res.PeakRSSBytes = hwm
	}
	fmt.Printf("%s: %d pods gone in %.1fs (p50 %.0f ms p99 %.0f ms)\n", *name, *pods, res.DeletePhase, res.Gone.P50, res.Gone.P99)
	return writeJSON(*out, res)
}

func podName(i int) string { return fmt.Sprintf("bench-%03d", i) }

// benchPod is the workload's pod: a configMap volume, the service-account
// token (automounted), an HTTP readiness probe and an exec liveness probe.
func benchPod(i int, image string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName(i), Labels: map[string]string{"app": "bench"}},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{
				Name: "app", Image: image, Args: []string{"netexec", "--http-port=8080"},
				VolumeMounts: []v1.VolumeMount{{Name: "config", MountPath: "/etc/bench"}},
				ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/hostname", Port: intstr.FromInt32(8080)}},
					PeriodSeconds: 10},
				LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/etc/bench/key"}}},
					PeriodSeconds: 10},
			}},
			Volumes: []v1.Volume{{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
				LocalObjectReference: v1.LocalObjectReference{Name: "bench"}}}}},
		},
	}
}

// podTimes is when the watch first saw a pod Running, Ready, and deleted.
type podTimes struct {
	running, ready, gone time.Time
	restarts             int32
}

// podWatch records podTimes for every pod of a namespace.
type podWatch struct {
	mu      sync.Mutex
	changed chan struct{}
	pods    map[string]*podTimes
	cancel  context.CancelFunc
	done    chan struct{}
}

func newPodWatch(ctx context.Context, cs kubernetes.Interface, ns string) *podWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &podWatch{changed: make(chan struct{}, 1), pods: map[string]*podTimes{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		watchLoop(ctx, func(ctx context.Context, rv string) (watch.Interface, error) {
			return cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		}, func(t watch.EventType, obj runtime.Object) {
			if p, ok := obj.(*v1.Pod); ok {
				w.observe(t, p, time.Now())
			}
		})
	}()
	return w
}

func (w *podWatch) observe(t watch.EventType, p *v1.Pod, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	pt := w.pods[p.Name]
	if pt == nil {
		pt = &podTimes{}
		w.pods[p.Name] = pt
	}
	if pt.running.IsZero() && p.Status.Phase == v1.PodRunning {
		pt.running = now
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady && c.Status == v1.ConditionTrue && pt.ready.IsZero() {
			pt.ready = now
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		pt.restarts = max(pt.restarts, c.RestartCount)
	}
	if t == watch.Deleted && pt.gone.IsZero() {
		pt.gone = now
	}
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

func (w *podWatch) get(name string) podTimes {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.pods[name]; p != nil {
		return *p
	}
	return podTimes{}
}

func (w *podWatch) restarts() int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var n int32
	for _, p := range w.pods {
		n += p.restarts
	}
	return n
}

// waitAll waits until n pods satisfy done.
func (w *podWatch) waitAll(ctx context.Context, timeout time.Duration, done func(*podTimes) bool, n int) error {
	return waitCount(ctx, timeout, w.changed, nil, n, "pods", func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		k := 0
		for _, p := range w.pods {
			if done(p) {
				k++
			}
		}
		return k
	})
}

// waitCount waits until count() reaches n, counting again on every signal
// of changed; it gives up after timeout, or when abort is closed (nil:
// never). what names the things counted in the time-out error.
func waitCount(ctx context.Context, timeout time.Duration, changed <-chan struct{}, abort <-chan struct{}, n int, what string, count func() int) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		k := count()
		if k >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-abort:
			return errAborted
		case <-deadline.C:
			return fmt.Errorf("%d of %d %s after %s", k, n, what, timeout)
		case <-changed:
		}
	}
}

var errAborted = errors.New("aborted")

func (w *podWatch) stop() {
	w.cancel()
	<-w.done
}

// watchLoop keeps a watch open, each one starting where the last ended,
// until ctx ends, and hands every object event to seen. After an error event
// (410 Gone: the version is too old) it starts over from the current state.
func watchLoop(ctx context.Context, open func(ctx context.Context, rv string) (watch.Interface, error), seen func(watch.EventType, runtime.Object)) {
	rv := ""
	for ctx.Err() == nil {
		wi, err := open(ctx, rv)
		if err != nil {
			_ = sleepCtx(ctx, time.Second)
			continue
		}
		for ev := range wi.ResultChan() {
			if ev.Type == watch.Error {
				rv = ""
				break
			}
			m, err := meta.Accessor(ev.Object)
			if err != nil {
				continue
			}
			rv = m.GetResourceVersion()
			if ev.Type != watch.Bookmark {
				seen(ev.Type, ev.Object)
			}
		}
		wi.Stop()
	}
}

// adminClient is a client of kubeconfig allowed qps requests a second.
func adminClient(kubeconfig string, qps float32) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = qps, int(2*qps)
	return kubernetes.NewForConfig(cfg)
}

// ensureNamespace creates namespace ns unless it exists.
func ensureNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	// A namespace the previous run deleted may still be terminating: wait
	// for it to go before creating it again.
	if err := waitFor(ctx, 3*time.Minute, func() bool {
		n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || err == nil && n.DeletionTimestamp == nil
	}); err != nil {
		return fmt.Errorf("namespace %s still terminating: %w", ns, err)
	}
	_, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// parallel runs f(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, f func(i int) error) error {
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					select {
					case errs <- fmt.Errorf("item %d: %w", i, err):
					default:
					}
				}
			}
		})
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return ctx.Err()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// highWaterMark is a process's peak resident set (VmHWM).
func highWaterMark(pid int) (int64, error) { return statusBytes(pid, "VmHWM") }
