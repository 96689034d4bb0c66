package virtualnode_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/virtualnode"
)

// The method set of a virtual-kubelet provider (node.PodLifecycleHandler,
// node.PodNotifier and the logs of nodeutil.Provider), with the option
// struct of its api package written out here: a real port imports
// virtual-kubelet's packages instead.
type vkProvider interface {
	CreatePod(ctx context.Context, pod *v1.Pod) error
	UpdatePod(ctx context.Context, pod *v1.Pod) error
	DeletePod(ctx context.Context, pod *v1.Pod) error
	GetPod(ctx context.Context, namespace, name string) (*v1.Pod, error)
	GetPodStatus(ctx context.Context, namespace, name string) (*v1.PodStatus, error)
	GetPods(ctx context.Context) ([]*v1.Pod, error)
	NotifyPods(ctx context.Context, cb func(*v1.Pod))
	GetContainerLogs(ctx context.Context, namespace, podName, containerName string, opts vkLogOpts) (io.ReadCloser, error)
	// virtual-kubelet's own copy of the kubelet's stats types
	// (statsv1alpha1) has the same fields: a real port converts.
	GetStatsSummary(ctx context.Context) (*statsapi.Summary, error)
}

// vkLogOpts stands for virtual-kubelet's api.ContainerLogOpts.
type vkLogOpts struct {
	Tail, LimitBytes, SinceSeconds int
	Timestamps, Follow, Previous   bool
	SinceTime                      time.Time
}

// errVKNotFound stands for virtual-kubelet's errdefs.NotFound.
var errVKNotFound = errors.New("not found")

// fromVK adapts a virtual-kubelet provider to virtualnode.Provider,
// PodNotifier and LogProvider.
type fromVK struct {
	vk    vkProvider
	clock clock.Clock
	mu    sync.Mutex
	gen   map[types.UID]int64 // generation last created or updated
}

func newFromVK(vk vkProvider, clk clock.Clock) *fromVK {
	return &fromVK{vk: vk, clock: clk, gen: map[types.UID]int64{}}
}

// CreatePod is called on every sync: create once, update on a new
// generation.
func (a *fromVK) CreatePod(ctx context.Context, pod *v1.Pod) error {
	a.mu.Lock()
	gen, seen := a.gen[pod.UID]
	a.mu.Unlock()
	var err error
	switch {
	case !seen:
		err = a.vk.CreatePod(ctx, pod)
	case gen != pod.Generation:
		err = a.vk.UpdatePod(ctx, pod)
	default:
		return nil
	}
	if err == nil {
		a.mu.Lock()
		a.gen[pod.UID] = pod.Generation
		a.mu.Unlock()
	}
	return err
}

// DeletePod asks the provider to delete the pod, then waits (on the clock,
// checking every second) until it reports no running container.
func (a *fromVK) DeletePod(ctx context.Context, pod *v1.Pod, _ time.Duration) error {
	if err := a.vk.DeletePod(ctx, pod); err != nil && !errors.Is(err, errVKNotFound) {
		return err
	}
	for {
		st, err := a.PodStatus(ctx, pod)
		if err != nil {
			return err
		}
		if st == nil || !running(st) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-a.clock.After(time.Second):
		}
	}
}

func running(st *v1.PodStatus) bool {
	for _, cs := range st.ContainerStatuses {
		if cs.State.Terminated == nil && cs.State.Waiting == nil {
			return true
		}
	}
	return false
}

func (a *fromVK) PodStatus(ctx context.Context, pod *v1.Pod) (*v1.PodStatus, error) {
	st, err := a.vk.GetPodStatus(ctx, pod.Namespace, pod.Name)
	if errors.Is(err, errVKNotFound) {
		return nil, nil
	}
	return st, err
}

func (a *fromVK) ForgetPod(uid types.UID) {
	a.mu.Lock()
	delete(a.gen, uid)
	a.mu.Unlock()
}

// Healthy: a real port keeps the result of NodeProvider.Ping, polled in
// the background.
func (a *fromVK) Healthy() error { return nil }

func (a *fromVK) NotifyPods(notify func(types.UID)) {
	a.vk.NotifyPods(context.Background(), func(p *v1.Pod) { notify(p.UID) })
}

func (a *fromVK) ContainerLogs(ctx context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions, stdout, _ io.Writer) error {
	o := vkLogOpts{Timestamps: opts.Timestamps, Follow: opts.Follow, Previous: opts.Previous}
	if opts.TailLines != nil {
		o.Tail = int(*opts.TailLines)
	}
	if opts.LimitBytes != nil {
		o.LimitBytes = int(*opts.LimitBytes)
	}
	if opts.SinceSeconds != nil {
		o.SinceSeconds = int(*opts.SinceSeconds)
	}
	if opts.SinceTime != nil {
		o.SinceTime = opts.SinceTime.Time
	}
	r, err := a.vk.GetContainerLogs(ctx, pod.Namespace, pod.Name, container, o)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	if stdout == nil {
		stdout = io.Discard
	}
	_, err = io.Copy(stdout, r)
	return err
}

// PodStats picks the pod out of the provider's node summary (a provider
// with many pods would cache the summary for a scrape).
func (a *fromVK) PodStats(ctx context.Context, pod *v1.Pod) (*statsapi.PodStats, error) {
	sum, err := a.vk.GetStatsSummary(ctx)
	if err != nil {
		return nil, err
	}
	for i := range sum.Pods {
		if ref := sum.Pods[i].PodRef; ref.Namespace == pod.Namespace && ref.Name == pod.Name {
			return &sum.Pods[i], nil
		}
	}
	return nil, nil
}

var (
	_ virtualnode.Provider      = (*fromVK)(nil)
	_ virtualnode.PodNotifier   = (*fromVK)(nil)
	_ virtualnode.LogProvider   = (*fromVK)(nil)
	_ virtualnode.StatsProvider = (*fromVK)(nil)
)

// echoVK is a toy virtual-kubelet provider: its pods run at once and log
// one line.
type echoVK struct {
	mu   sync.Mutex
	pods map[string]*v1.Pod
}

func (p *echoVK) CreatePod(_ context.Context, pod *v1.Pod) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	pod = pod.DeepCopy()
	pod.Status = v1.PodStatus{Phase: v1.PodRunning}
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, v1.ContainerStatus{Name: c.Name, Ready: true,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Unix(0, 0)}}})
	}
	p.pods[pod.Namespace+"/"+pod.Name] = pod
	return nil
}
func (p *echoVK) UpdatePod(ctx context.Context, pod *v1.Pod) error { return p.CreatePod(ctx, pod) }
func (p *echoVK) DeletePod(_ context.Context, pod *v1.Pod) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pods, pod.Namespace+"/"+pod.Name)
	return nil
}
func (p *echoVK) GetPod(_ context.Context, ns, name string) (*v1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pod, ok := p.pods[ns+"/"+name]; ok {
		return pod.DeepCopy(), nil
	}
	return nil, errVKNotFound
}
func (p *echoVK) GetPodStatus(ctx context.Context, ns, name string) (*v1.PodStatus, error) {
	pod, err := p.GetPod(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}
func (p *echoVK) GetPods(context.Context) ([]*v1.Pod, error) { return nil, nil }
func (p *echoVK) NotifyPods(context.Context, func(*v1.Pod))  {}
func (p *echoVK) GetStatsSummary(context.Context) (*statsapi.Summary, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sum := &statsapi.Summary{}
	for _, pod := range p.pods {
		cores, mem := uint64(100_000_000), uint64(32<<20) // 100m, 32Mi each
		sum.Pods = append(sum.Pods, statsapi.PodStats{PodRef: statsapi.PodReference{Namespace: pod.Namespace, Name: pod.Name},
			CPU: &statsapi.CPUStats{UsageNanoCores: &cores}, Memory: &statsapi.MemoryStats{WorkingSetBytes: &mem}})
	}
	return sum, nil
}
func (p *echoVK) GetContainerLogs(_ context.Context, ns, pod, container string, _ vkLogOpts) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader("hello from " + ns + "/" + pod + "/" + container + "\n")), nil
}

// Example_virtualKubeletProvider ports a virtual-kubelet provider: an
// adapter (fromVK, in this file) maps its methods onto virtualnode's, and
// the Agent runs it as a node; with Config.API its logs serve kubectl logs
// and its stats kubectl top (through metrics-server).
func Example_virtualKubeletProvider() {
	p := newFromVK(&echoVK{pods: map[string]*v1.Pod{}}, clock.RealClock{})
	ctx := context.Background()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	_ = p.CreatePod(ctx, pod)
	st, _ := p.PodStatus(ctx, pod)
	fmt.Println(st.Phase)
	var logs bytes.Buffer
	_ = p.ContainerLogs(ctx, pod, "app", &v1.PodLogOptions{}, &logs, nil)
	fmt.Print(logs.String())
	ps, _ := p.PodStats(ctx, pod)
	fmt.Printf("cpu %dm, memory %dMi\n", *ps.CPU.UsageNanoCores/1e6, *ps.Memory.WorkingSetBytes>>20)
	_ = p.DeletePod(ctx, pod, 30*time.Second)
	st, _ = p.PodStatus(ctx, pod)
	fmt.Println(st == nil)

	a, err := virtualnode.New(virtualnode.Config{Client: clientset.Wrap(fake.NewClientset()), Nodes: []string{"vk-0"}, Provider: p})
	fmt.Println(a.Nodes(), err)
	// Output:
	// Running
	// hello from default/web/app
	// cpu 100m, memory 32Mi
	// true
	// [vk-0] <nil>
}
