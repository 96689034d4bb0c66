package eviction

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/internal/diskusage"
)

// PodStatsLister is the part of a CRI RuntimeService (k8s.io/cri-api
// RuntimeService, as implemented by k8s.io/cri-client) the host summary
// provider reads pod usage from.
type PodStatsLister interface {
	ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error)
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
}

// criPodUIDLabel is the label the kubelet puts on every container with the
// UID of its pod.
const criPodUIDLabel = "io.kubernetes.pod.uid"

// HostSummaryConfig configures a HostSummaryProvider.
type HostSummaryConfig struct {
	// NodeName is reported as Summary.Node.NodeName.
	NodeName string
	// NodeFsPath is a path on the node filesystem; default
	// "/var/lib/kubelet", the kubelet's root directory.
	NodeFsPath string
	// ImageFsPath is a path on the runtime's image filesystem; empty means
	// the image filesystem is the node filesystem.
	ImageFsPath string
	// ContainerFsPath is a path on the filesystem of container writable
	// layers; empty means it is the image filesystem.
	ContainerFsPath string
	// ProcPath is where procfs is mounted; default "/proc".
	ProcPath string
	// AllocatableMemory, in bytes, enables the allocatableMemory.available
	// signal: the "pods" system container reports it minus the pods'
	// working set. Zero leaves the signal out.
	AllocatableMemory int64
	// Runtime provides pod and container usage; nil reports no pods.
	Runtime PodStatsLister
	// PodLogsDir is the pod log root (<dir>/<namespace>_<name>_<uid>/
	// <container>/): each container's logs are measured there. Empty: no
	// log usage.
	PodLogsDir string
	// PodVolumes reports the usage of a pod's volumes (by pod UID), as
	// volumes.Manager.Usage measures it; nil: no volume usage. With it and
	// PodLogsDir, a pod's local ephemeral storage is its containers'
	// writable layers and logs plus its local ephemeral volumes, as the
	// kubelet counts it: what emptyDir sizeLimit and ephemeral-storage
	// limits are enforced against.
	PodVolumes func(podUID string) []PodVolume
	// Clock timestamps node statistics; default the real clock.
	Clock clock.PassiveClock
}

// PodVolume is the usage of one volume of a pod.
type PodVolume struct {
	Name                  string
	UsedBytes, InodesUsed uint64
	// LocalEphemeral: counted in the pod's local ephemeral storage
	// (the kubelet's rule: a disk-backed emptyDir or a configMap).
	LocalEphemeral bool
	Time           time.Time
}

// HostSummaryProvider is a SummaryProvider for the real host: memory from
// /proc/meminfo, filesystems from statfs(2), PIDs from kernel limits and
// /proc/loadavg, and pod usage from CRI stats. Safe for concurrent use.
type HostSummaryProvider struct {
	cfg HostSummaryConfig
}

var _ SummaryProvider = (*HostSummaryProvider)(nil)

// NewHostSummaryProvider validates cfg and returns a provider.
func NewHostSummaryProvider(cfg HostSummaryConfig) (*HostSummaryProvider, error) {
	if cfg.NodeFsPath == "" {
		cfg.NodeFsPath = "/var/lib/kubelet"
	}
	if cfg.ProcPath == "" {
		cfg.ProcPath = "/proc"
	}
	if cfg.AllocatableMemory < 0 {
		return nil, fmt.Errorf("%w: AllocatableMemory %d is negative", ErrInvalidConfig, cfg.AllocatableMemory)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &HostSummaryProvider{cfg: cfg}, nil
}

// Get reads the host's statistics.
func (p *HostSummaryProvider) Get(ctx context.Context) (*statsapi.Summary, error) {
	now := metav1.NewTime(p.cfg.Clock.Now())
	s := &statsapi.Summary{Node: statsapi.NodeStats{NodeName: p.cfg.NodeName, StartTime: now}}
	var err error
	if s.Node.Memory, err = p.memory(now); err != nil {
		return nil, err
	}
	if s.Node.Fs, err = fsStats(p.cfg.NodeFsPath, now); err != nil {
		return nil, err
	}
	imageFs, containerFs := s.Node.Fs, s.Node.Fs
	if p.cfg.ImageFsPath != "" {
		if imageFs, err = fsStats(p.cfg.ImageFsPath, now); err != nil {
			return nil, err
		}
		containerFs = imageFs
	}
	if p.cfg.ContainerFsPath != "" {
		if containerFs, err = fsStats(p.cfg.ContainerFsPath, now); err != nil {
			return nil, err
		}
	}
	s.Node.Runtime = &statsapi.RuntimeStats{ImageFs: imageFs, ContainerFs: containerFs}
	if s.Node.Rlimit, err = p.rlimit(now); err != nil {
		return nil, err
	}
	if p.cfg.Runtime != nil {
		if s.Pods, err = podStatsFromCRI(ctx, p.cfg.Runtime); err != nil {
			// Node-level signals still stand; pods are ranked without
			// usage rather than every pass failing (containerd cannot
			// report sandboxes whose cgroup parent it does not manage).
			klog.FromContext(ctx).V(2).Info("Pod stats unavailable; the summary has no pods", "err", err)
			s.Pods = nil
		}
		for i := range s.Pods {
			p.podStorage(&s.Pods[i], now)
		}
	}
	if p.cfg.AllocatableMemory > 0 {
		s.Node.SystemContainers = append(s.Node.SystemContainers, p.podsContainer(s.Pods, now))
	}
	return s, nil
}

// podStorage adds the containers' log usage, the volumes' usage and the
// pod's local ephemeral storage to ps.
func (p *HostSummaryProvider) podStorage(ps *statsapi.PodStats, now metav1.Time) {
	ref := ps.PodRef
	if p.cfg.PodLogsDir != "" {
		dir := filepath.Join(p.cfg.PodLogsDir, ref.Namespace+"_"+ref.Name+"_"+ref.UID)
		for i := range ps.Containers {
			c := &ps.Containers[i]
			if bytes, inodes, err := diskusage.Of(filepath.Join(dir, c.Name)); err == nil {
				c.Logs = &statsapi.FsStats{Time: now, UsedBytes: &bytes, InodesUsed: &inodes}
			}
		}
	}
	var ephemeral []statsapi.VolumeStats
	if p.cfg.PodVolumes != nil {
		for _, v := range p.cfg.PodVolumes(ref.UID) {
			vs := statsapi.VolumeStats{Name: v.Name, FsStats: statsapi.FsStats{Time: metav1.NewTime(v.Time),
				UsedBytes: ptr.To(v.UsedBytes), InodesUsed: ptr.To(v.InodesUsed)}}
			ps.VolumeStats = append(ps.VolumeStats, vs)
			if v.LocalEphemeral {
				ephemeral = append(ephemeral, vs)
			}
		}
	}
	if p.cfg.PodLogsDir == "" && p.cfg.PodVolumes == nil {
		return // too little known to sum
	}
	var used, inodes uint64
	for _, c := range ps.Containers {
		used += fsUsedBytes(c.Rootfs) + fsUsedBytes(c.Logs)
		if c.Rootfs != nil && c.Rootfs.InodesUsed != nil {
			inodes += *c.Rootfs.InodesUsed
		}
		if c.Logs != nil && c.Logs.InodesUsed != nil {
			inodes += *c.Logs.InodesUsed
		}
	}
	for _, v := range ephemeral {
		used += *v.UsedBytes
		inodes += *v.InodesUsed
	}
	ps.EphemeralStorage = &statsapi.FsStats{Time: now, UsedBytes: &used, InodesUsed: &inodes}
}

// memory reads MemTotal and MemAvailable: capacity is MemTotal, available
// MemAvailable and the working set the difference.
func (p *HostSummaryProvider) memory(now metav1.Time) (*statsapi.MemoryStats, error) {
	path := filepath.Join(p.cfg.ProcPath, "meminfo")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("eviction: read %s: %w", path, err)
	}
	fields := map[string]uint64{"MemTotal:": 0, "MemAvailable:": 0, "MemFree:": 0}
	sc := bufio.NewScanner(bytes.NewReader(data))
	found := 0
	for sc.Scan() && found < len(fields) {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		if _, ok := fields[f[0]]; ok {
			v, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("eviction: %s: %s: %w", path, f[0], err)
			}
			fields[f[0]] = v * 1024
			found++
		}
	}
	total, avail := fields["MemTotal:"], fields["MemAvailable:"]
	if total == 0 || avail > total {
		return nil, fmt.Errorf("eviction: %s: no usable MemTotal/MemAvailable", path)
	}
	ws, usage := total-avail, total-fields["MemFree:"]
	return &statsapi.MemoryStats{Time: now, AvailableBytes: &avail, WorkingSetBytes: &ws, UsageBytes: &usage}, nil
}

// rlimit reports the PID limit (min of pid_max and threads-max) and the
// number of tasks from /proc/loadavg.
func (p *HostSummaryProvider) rlimit(now metav1.Time) (*statsapi.RlimitStats, error) {
	maxPID := int64(-1)
	for _, f := range []string{"sys/kernel/pid_max", "sys/kernel/threads-max"} {
		v, err := readInt(filepath.Join(p.cfg.ProcPath, f))
		if err != nil {
			return nil, err
		}
		if maxPID < 0 || v < maxPID {
			maxPID = v
		}
	}
	path := filepath.Join(p.cfg.ProcPath, "loadavg")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("eviction: read %s: %w", path, err)
	}
	f := strings.Fields(string(data))
	if len(f) < 4 || !strings.Contains(f[3], "/") {
		return nil, fmt.Errorf("eviction: %s: unexpected format %q", path, data)
	}
	n, err := strconv.ParseInt(f[3][strings.IndexByte(f[3], '/')+1:], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("eviction: %s: %w", path, err)
	}
	return &statsapi.RlimitStats{Time: now, MaxPID: &maxPID, NumOfRunningProcesses: &n}, nil
}

func readInt(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("eviction: read %s: %w", path, err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("eviction: %s: %w", path, err)
	}
	return v, nil
}

// podsContainer is the "pods" system container: allocatable memory minus
// the pods' working set.
func (p *HostSummaryProvider) podsContainer(pods []statsapi.PodStats, now metav1.Time) statsapi.ContainerStats {
	var ws uint64
	for i := range pods {
		ws += uint64(memoryUsage(pods[i].Memory))
	}
	alloc := uint64(p.cfg.AllocatableMemory)
	avail := alloc - min(ws, alloc)
	return statsapi.ContainerStats{
		Name: statsapi.SystemContainerPods, StartTime: now,
		Memory: &statsapi.MemoryStats{Time: now, AvailableBytes: &avail, WorkingSetBytes: &ws},
	}
}
