package eviction

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func u64p(v uint64) *uint64 { return &v }

func qty(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

const (
	Ki = 1024
	Mi = 1024 * Ki
	Gi = 1024 * Mi
)

// podOpt tweaks a test pod.
type podOpt func(*v1.Pod)

func withMemRequest(s string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(s)}
	}
}

func withStorageRequest(s string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(s)}
	}
}

func withPriority(v int32) podOpt { return func(p *v1.Pod) { p.Spec.Priority = &v } }

func withAnnotation(k, v string) podOpt {
	return func(p *v1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func withGrace(s int64) podOpt {
	return func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = &s }
}

func newPod(name string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// podUsage is the usage a test pod reports.
type podUsage struct {
	mem, rootfs, logs, rootInodes uint64
	procs                         uint64
}

func podStats(p *v1.Pod, u podUsage) statsapi.PodStats {
	return statsapi.PodStats{
		PodRef: statsapi.PodReference{Name: p.Name, Namespace: p.Namespace, UID: string(p.UID)},
		Memory: &statsapi.MemoryStats{WorkingSetBytes: u64p(u.mem)},
		Containers: []statsapi.ContainerStats{{
			Name:   "app",
			Memory: &statsapi.MemoryStats{WorkingSetBytes: u64p(u.mem)},
			Rootfs: &statsapi.FsStats{UsedBytes: u64p(u.rootfs), InodesUsed: u64p(u.rootInodes)},
			Logs:   &statsapi.FsStats{UsedBytes: u64p(u.logs), InodesUsed: u64p(0)},
		}},
		ProcessStats: &statsapi.ProcessStats{ProcessCount: u64p(u.procs)},
	}
}

// node describes node-level figures of a test summary.
type node struct {
	memAvail, memWS      uint64
	fsAvail, fsCap       uint64
	inodesFree, inodes   uint64
	imageAvail, imageCap uint64
	maxPID, procs        int64
	time                 time.Time
}

func healthyNode() node {
	return node{
		memAvail: 8 * Gi, memWS: 8 * Gi,
		fsAvail: 50 * Gi, fsCap: 100 * Gi, inodesFree: 900_000, inodes: 1_000_000,
		imageAvail: 50 * Gi, imageCap: 100 * Gi, maxPID: 32768, procs: 100,
	}
}

func (n node) summary(pods ...statsapi.PodStats) *statsapi.Summary {
	t := metav1.NewTime(n.time)
	return &statsapi.Summary{
		Node: statsapi.NodeStats{
			Memory: &statsapi.MemoryStats{Time: t, AvailableBytes: u64p(n.memAvail), WorkingSetBytes: u64p(n.memWS)},
			Fs:     &statsapi.FsStats{Time: t, AvailableBytes: u64p(n.fsAvail), CapacityBytes: u64p(n.fsCap), InodesFree: u64p(n.inodesFree), Inodes: u64p(n.inodes)},
			Runtime: &statsapi.RuntimeStats{
				ImageFs:     &statsapi.FsStats{Time: t, AvailableBytes: u64p(n.imageAvail), CapacityBytes: u64p(n.imageCap), InodesFree: u64p(n.inodesFree), Inodes: u64p(n.inodes)},
				ContainerFs: &statsapi.FsStats{Time: t, AvailableBytes: u64p(n.fsAvail), CapacityBytes: u64p(n.fsCap), InodesFree: u64p(n.inodesFree), Inodes: u64p(n.inodes)},
			},
			Rlimit: &statsapi.RlimitStats{Time: t, MaxPID: &n.maxPID, NumOfRunningProcesses: &n.procs},
		},
		Pods: pods,
	}
}

// fakeHost is a test host: a mutable summary, a pod list and a kill log.
type fakeHost struct {
	mu       sync.Mutex
	summary  *statsapi.Summary
	getErr   error
	pods     []*v1.Pod
	killed   []killed
	getCalls int
	onKill   func(*v1.Pod)
	onGet    func(int)
}

type killed struct {
	pod    *v1.Pod
	grace  int64
	status v1.PodStatus
}

func (h *fakeHost) set(s *statsapi.Summary) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.summary = s
}

func (h *fakeHost) Get(context.Context) (*statsapi.Summary, error) {
	h.mu.Lock()
	h.getCalls++
	n, f := h.getCalls, h.onGet
	h.mu.Unlock()
	if f != nil {
		f(n)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.summary, h.getErr
}

// setPods replaces the active pods; Run may be reading them.
func (h *fakeHost) setPods(pods ...*v1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pods = pods
}

func (h *fakeHost) activePods() []*v1.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*v1.Pod(nil), h.pods...)
}

func (h *fakeHost) kill(_ context.Context, p *v1.Pod, grace int64, update func(*v1.PodStatus)) error {
	var st v1.PodStatus
	update(&st)
	h.mu.Lock()
	h.killed = append(h.killed, killed{p, grace, st})
	f := h.onKill
	h.mu.Unlock()
	if f != nil {
		f(p)
	}
	return nil
}

func (h *fakeHost) kills() []killed {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]killed(nil), h.killed...)
}
