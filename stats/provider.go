package stats

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Provider produces the node's stats/v1alpha1 Summary from the host's
// procfs, cgroups and filesystems and the runtime's CRI stats. Its Get
// satisfies eviction.SummaryProvider and kubeletapi.SummaryProvider, and
// GetCPUAndMemoryStats is the cheaper summary kubeletapi serves
// /metrics/resource from. Safe for concurrent use; every call returns a
// fresh Summary the Provider never touches again.
type Provider struct {
	cfg Config
	// created is the kubelet system container's start time.
	created time.Time
	// podRates caches CPU samples of containers and sandboxes (pruned
	// after every listing); hostRates those of the node and system
	// containers.
	podRates, hostRates *cpuRates

	mu sync.Mutex
	// bootTime is the node's start time, read once from procfs.
	bootTime time.Time
}

// New validates cfg, fills in defaults and returns a Provider. It does no
// I/O.
func New(cfg Config) (*Provider, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	return &Provider{
		cfg:       cfg,
		created:   cfg.Clock.Now(),
		podRates:  newCPURates(cfg.CPUSampleInterval),
		hostRates: newCPURates(cfg.CPUSampleInterval),
	}, nil
}

// Get reads the whole summary: node CPU, memory, swap, IO, network,
// filesystems, PID limits and system containers, and every pod with its
// containers, volumes and local ephemeral storage. It fails if node memory,
// a filesystem or the PID limits cannot be read; pods the runtime cannot
// list are left out (logged at V(2)) so that eviction's node-level signals
// still stand; any other figure that cannot be read is left out.
func (p *Provider) Get(ctx context.Context) (*statsapi.Summary, error) {
	return p.summary(ctx, true)
}

// GetCPUAndMemoryStats reads the CPU, memory and swap figures only (CPU and
// memory with their pressure), as the kubelet's method of that name: node,
// system containers, pods and containers, without IO, filesystems,
// networks, PID limits, logs or volumes.
// It is what /metrics/resource and /stats/summary?only_cpu_and_memory=true
// serve.
func (p *Provider) GetCPUAndMemoryStats(ctx context.Context) (*statsapi.Summary, error) {
	return p.summary(ctx, false)
}

func (p *Provider) summary(ctx context.Context, full bool) (*statsapi.Summary, error) {
	now := p.cfg.Clock.Now()
	t := metav1.NewTime(now)
	mi, err := readMeminfo(p.cfg.ProcPath)
	if err != nil {
		return nil, err
	}
	stat, statErr := readProcStat(p.cfg.ProcPath)
	if statErr != nil {
		klog.FromContext(ctx).V(4).Info("Cannot read procfs stat", "err", statErr)
	}
	boot := p.boot(stat, statErr)
	cg := detectCgroupFS(p.cfg.CgroupRoot)
	root, err := cg.read("/")
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Cannot read the root cgroup", "err", err)
	}

	n := statsapi.NodeStats{NodeName: p.cfg.NodeName, StartTime: metav1.NewTime(boot)}
	n.Memory, n.Swap = nodeMemory(mi, root, t)
	var ps *procStat
	if statErr == nil {
		ps = &stat
	}
	n.CPU = p.nodeCPU(ctx, root, ps, now)

	var containerFs *statsapi.FsStats
	if full {
		n.IO = ioStats(root.psi.io, t)
		n.Network = nodeNetwork(ctx, p.cfg.ProcPath, t)
		if err := p.filesystems(&n, t); err != nil {
			return nil, err
		}
		containerFs = n.Runtime.ContainerFs
		if n.Rlimit, err = p.rlimit(t); err != nil {
			return nil, err
		}
	}
	s := &statsapi.Summary{Node: n}
	if p.cfg.Runtime != nil {
		if s.Pods, err = p.listPods(ctx, cg, now, full, containerFs); err != nil {
			// Node-level signals still stand; pods are ranked without
			// usage rather than every pass failing.
			klog.FromContext(ctx).V(2).Info("Pod stats unavailable; the summary has no pods", "err", err)
			s.Pods = nil
		}
		if full {
			for i := range s.Pods {
				p.podStorage(&s.Pods[i], s.Node.Fs, t)
			}
		}
	}
	s.Node.SystemContainers = p.systemContainers(ctx, cg, s.Pods, now, boot, full)
	return s, nil
}

// boot remembers the first boot time read.
func (p *Provider) boot(st procStat, err error) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bootTime.IsZero() && err == nil {
		p.bootTime = st.bootTime
	}
	return p.bootTime
}

// filesystems reads the node, image and container filesystems.
func (p *Provider) filesystems(n *statsapi.NodeStats, now metav1.Time) error {
	var err error
	if n.Fs, err = fsStats(p.cfg.NodeFsPath, now); err != nil {
		return err
	}
	imageFs, containerFs := n.Fs, n.Fs
	if p.cfg.ImageFsPath != "" {
		if imageFs, err = fsStats(p.cfg.ImageFsPath, now); err != nil {
			return err
		}
		containerFs = imageFs
	}
	if p.cfg.ContainerFsPath != "" {
		if containerFs, err = fsStats(p.cfg.ContainerFsPath, now); err != nil {
			return err
		}
	}
	n.Runtime = &statsapi.RuntimeStats{ImageFs: imageFs, ContainerFs: containerFs}
	return nil
}
