package stats

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
)

// Defaults, the kubelet's where it has one.
const (
	// DefaultNodeFsPath is the kubelet's root directory, which lives on the
	// node filesystem.
	DefaultNodeFsPath = "/var/lib/kubelet"
	// DefaultProcPath is where procfs is mounted.
	DefaultProcPath = "/proc"
	// DefaultCgroupRoot is where the cgroup hierarchies are mounted (the
	// unified hierarchy on cgroup v2, one directory per controller on v1).
	DefaultCgroupRoot = "/sys/fs/cgroup"
	// DefaultCPUSampleInterval is the shortest interval usageNanoCores is
	// computed over: the eviction manager's monitoring interval, the only
	// caller that advances the kubelet's CPU usage cache, and cadvisor's
	// housekeeping interval for the node.
	DefaultCPUSampleInterval = 10 * time.Second
)

// ErrInvalidConfig wraps every configuration error returned by New.
var ErrInvalidConfig = errors.New("stats: invalid config")

// PodStatsLister is the part of a CRI RuntimeService (k8s.io/cri-api
// RuntimeService, as implemented by k8s.io/cri-client) the provider reads
// pods from: the sandboxes and containers (creation times, states, which
// sandbox a container belongs to) and their statistics. Its methods may be
// called concurrently; the provider never mutates what they return.
type PodStatsLister interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error)
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
}

// PodVolume is the usage of one volume of a pod (volumes.VolumeUsage has
// the same fields).
type PodVolume struct {
	// Name is the volume's name in the pod spec.
	Name string
	// UsedBytes and InodesUsed are what the volume holds.
	UsedBytes, InodesUsed uint64
	// CapacityBytes, AvailableBytes, Inodes and InodesFree describe the
	// filesystem the volume is on, as the kubelet reports them for every
	// volume. A zero CapacityBytes means they are not known: the summary
	// leaves all four out.
	CapacityBytes, AvailableBytes, Inodes, InodesFree uint64
	// PVCRef is the claim of a persistentVolumeClaim or generic ephemeral
	// volume; nil for the others. The kubelet_volume_stats_* families
	// report the volumes that have one.
	PVCRef *statsapi.PVCReference
	// Abnormal is the volume's health as its CSI driver reports it
	// (NodeGetVolumeStats' volume condition): the summary's
	// VolumeHealthStats and kubelet_volume_stats_health_status_abnormal.
	// nil: not known.
	Abnormal *bool
	// LocalEphemeral: counted in the pod's local ephemeral storage
	// (the kubelet's rule: a disk-backed emptyDir or a configMap; never a
	// claim's volume).
	LocalEphemeral bool
	// Time is when the usage was measured.
	Time time.Time
}

// Config configures a Provider. The zero value reads the real host with the
// kubelet's default paths and reports no pods.
type Config struct {
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
	// ProcPath is where procfs is mounted; default "/proc". The provider
	// reads meminfo, stat, loadavg, sys/kernel/{pid_max,threads-max},
	// 1/net/dev (the host network namespace; net/dev if absent),
	// self/cgroup and the sandboxes' <pid>/net/dev from it.
	ProcPath string
	// CgroupRoot is where cgroups are mounted; default "/sys/fs/cgroup".
	// cgroup v2 is recognised by a cgroup.controllers file there (whose
	// cpu.pressure, memory.pressure and io.pressure files are read);
	// otherwise each v1 controller is a directory below it (cpuacct or
	// cpu,cpuacct, memory, and blkio).
	CgroupRoot string
	// KubeletCgroup, RuntimeCgroup, SystemCgroup and PodsCgroup are the
	// cgroups reported as the "kubelet", "runtime", "misc" and "pods"
	// system containers: paths below the hierarchy root as
	// /proc/<pid>/cgroup shows them ("/system.slice/containerd.service";
	// "/kubepods" with the cgroupfs driver, "/kubepods.slice" with
	// systemd). Empty leaves the container out, except KubeletCgroup,
	// which is then this process's own cgroup (from ProcPath/self/cgroup,
	// as the kubelet finds its own when --kubelet-cgroups is unset). A
	// cgroup that cannot be read is left out, not an error.
	//
	// Below PodsCgroup the provider also finds each pod's cgroup
	// ("pod<uid>" directly or in "burstable"/"besteffort"; with systemd
	// "kubepods[-<qos>]-pod<uid>.slice") and in it the cgroups of the pod's
	// containers and sandbox (named by CRI ID, or "<runtime>-<id>.scope"),
	// for the pressure the runtime does not report and for the sandbox's
	// network namespace (through its first process in cgroup.procs and
	// ProcPath/<pid>/net/dev). Without PodsCgroup pods and containers have
	// only the runtime's pressure and interfaces.
	KubeletCgroup, RuntimeCgroup, SystemCgroup, PodsCgroup string
	// AllocatableMemory, in bytes, is the node's allocatable memory. With
	// it the "pods" system container reports AvailableBytes =
	// AllocatableMemory − its working set (the allocatableMemory.available
	// eviction signal); its working set is PodsCgroup's, or, when that is
	// unset or unreadable, the sum of the pods' working sets. Zero: the
	// pods container has AvailableBytes only if PodsCgroup has a memory
	// limit, and is absent without PodsCgroup.
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
	// limits are enforced against. Called from Get, possibly concurrently.
	PodVolumes func(podUID string) []PodVolume
	// CPUSampleInterval is the shortest interval usageNanoCores is
	// computed over when the runtime does not report it (and for the node
	// and system containers, always): a sample taken sooner after the one
	// cached reports the cached rate. Default 10s; negative is invalid.
	CPUSampleInterval time.Duration
	// Clock timestamps statistics and the CPU samples that carry no time of
	// their own; default the real clock.
	Clock clock.PassiveClock
}

func (c *Config) defaults() error {
	var errs []error
	if c.NodeFsPath == "" {
		c.NodeFsPath = DefaultNodeFsPath
	}
	if c.ProcPath == "" {
		c.ProcPath = DefaultProcPath
	}
	if c.CgroupRoot == "" {
		c.CgroupRoot = DefaultCgroupRoot
	}
	if c.AllocatableMemory < 0 {
		errs = append(errs, fmt.Errorf("AllocatableMemory %d is negative", c.AllocatableMemory))
	}
	switch {
	case c.CPUSampleInterval < 0:
		errs = append(errs, fmt.Errorf("CPUSampleInterval %v is negative", c.CPUSampleInterval))
	case c.CPUSampleInterval == 0:
		c.CPUSampleInterval = DefaultCPUSampleInterval
	}
	for _, cg := range []struct {
		name string
		path *string
	}{{"KubeletCgroup", &c.KubeletCgroup}, {"RuntimeCgroup", &c.RuntimeCgroup},
		{"SystemCgroup", &c.SystemCgroup}, {"PodsCgroup", &c.PodsCgroup}} {
		if *cg.path == "" {
			continue
		}
		if slices.Contains(strings.Split(*cg.path, "/"), "..") {
			errs = append(errs, fmt.Errorf("%s %q has a .. element", cg.name, *cg.path))
		}
		*cg.path = path.Clean("/" + *cg.path)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}
