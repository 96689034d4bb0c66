package cgroups

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ErrInvalidConfig wraps every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("cgroups: invalid config")

// Drivers.
const (
	// DriverCgroupfs writes the cgroup filesystem directly; cgroup
	// parents are paths ("/kubepods/burstable/pod<uid>").
	DriverCgroupfs = "cgroupfs"
	// DriverSystemd creates the tree as systemd slices through systemd's
	// D-Bus API (kubepods.slice/kubepods-burstable.slice/...); cgroup
	// parents are the slices' paths.
	DriverSystemd = "systemd"
)

// Names of the tree.
const (
	// KubepodsName is the cgroup holding every pod.
	KubepodsName = "kubepods"
	// BurstableName is the Burstable QoS cgroup under kubepods.
	BurstableName = "burstable"
	// BestEffortName is the BestEffort QoS cgroup under kubepods.
	BestEffortName = "besteffort"
	podPrefix      = "pod"
)

// Config configures a Manager. Zero values are the kubelet's defaults.
type Config struct {
	// Mount is where cgroups are mounted. Default /sys/fs/cgroup.
	Mount string
	// Driver is DriverCgroupfs (the default) or DriverSystemd. The
	// runtime must use the same (containerd's SystemdCgroup).
	Driver string
	// Systemd is the D-Bus connection of DriverSystemd; nil connects to
	// the system bus at Setup (and Close closes it).
	Systemd SystemdConn
	// Root is the kubelet's --cgroup-root, the parent of kubepods.
	// Default "/", the only root DriverSystemd takes.
	Root string
	// Allocatable, when set, is enforced on the kubepods cgroup (the
	// kubelet's --enforce-node-allocatable=pods).
	Allocatable v1.ResourceList
	// PodPIDsLimit, when positive, is every pod cgroup's pids.max (the
	// kubelet's --pod-max-pids).
	PodPIDsLimit int64
	// Clock times the operations recorded in
	// kubelet_cgroup_manager_duration_seconds. Default the real clock.
	Clock clock.PassiveClock
	// Registerer receives the kubelet's kubelet_cgroup_manager_duration_seconds
	// and kubelet_cgroup_version (nil: no metrics). Registering them twice
	// on one registry is an error from New.
	Registerer prometheus.Registerer
}

// Manager keeps the pod cgroup tree. It is safe for concurrent use.
type Manager struct {
	cfg   Config
	v2    bool
	roots []string // v1: one directory per hierarchy; v2: the mount
	plain bool     // roots are not cgroup filesystems (tests)
	root  []string // --cgroup-root as path elements
	// systemd: DriverSystemd; sd is its connection (nil until Setup),
	// ownSD when Setup opened it.
	systemd bool
	sd      SystemdConn
	ownSD   bool

	metrics *metrics // nil without Config.Registerer

	mu        sync.Mutex
	burstable uint64 // last burstable shares written
}

// New checks the configuration and finds the cgroup hierarchies. Nothing is
// created until Setup.
func New(cfg Config) (*Manager, error) {
	if cfg.Mount == "" {
		cfg.Mount = "/sys/fs/cgroup"
	}
	switch cfg.Driver {
	case "":
		cfg.Driver = DriverCgroupfs
	case DriverCgroupfs:
	case DriverSystemd:
		if cfg.Systemd == nil && !systemdRunning() {
			return nil, fmt.Errorf("%w: the systemd cgroup driver needs systemd as the host's init (there is no /run/systemd/system); configure the runtime and the agent with cgroupfs", ErrInvalidConfig)
		}
		if cfg.Root != "" && cfg.Root != "/" {
			return nil, fmt.Errorf("%w: cgroup root %q: the systemd driver keeps kubepods.slice at the root", ErrInvalidConfig, cfg.Root)
		}
	default:
		return nil, fmt.Errorf("%w: driver %q: want %s or %s", ErrInvalidConfig, cfg.Driver, DriverCgroupfs, DriverSystemd)
	}
	if cfg.Root == "" {
		cfg.Root = "/"
	}
	if !path.IsAbs(cfg.Root) || path.Clean(cfg.Root) != cfg.Root {
		return nil, fmt.Errorf("%w: cgroup root %q must be a clean absolute path", ErrInvalidConfig, cfg.Root)
	}
	if cfg.PodPIDsLimit < 0 {
		cfg.PodPIDsLimit = 0
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	m := &Manager{cfg: cfg, systemd: cfg.Driver == DriverSystemd, sd: cfg.Systemd}
	for _, e := range strings.Split(strings.Trim(cfg.Root, "/"), "/") {
		if e != "" {
			m.root = append(m.root, e)
		}
	}
	if err := m.findHierarchies(); err != nil {
		return nil, err
	}
	var err error
	if m.metrics, err = newMetrics(cfg.Registerer, m.v2); err != nil {
		return nil, err
	}
	return m, nil
}

// findHierarchies finds the unified hierarchy at the mount, or the v1
// hierarchies under it.
func (m *Manager) findHierarchies() error {
	cfg := m.cfg
	if _, err := os.Stat(filepath.Join(cfg.Mount, "cgroup.controllers")); err == nil {
		m.v2, m.roots = true, []string{cfg.Mount}
		m.plain = !isCgroupFS(cfg.Mount)
		return nil
	}
	entries, err := os.ReadDir(cfg.Mount)
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		dir := filepath.Join(cfg.Mount, e.Name())
		if e.Name() == "unified" { // the v2 side of a hybrid host: runc's business
			continue
		}
		real, err := filepath.EvalSymlinks(dir)
		if err != nil || seen[real] {
			continue
		}
		if _, err := os.Stat(filepath.Join(real, "cgroup.procs")); err != nil {
			continue
		}
		seen[real] = true
		m.roots = append(m.roots, real)
	}
	if len(m.roots) == 0 {
		return fmt.Errorf("cgroups: no cgroup hierarchy under %s", cfg.Mount)
	}
	sort.Strings(m.roots)
	m.plain = !isCgroupFS(m.roots[0])
	return nil
}

// V2 reports whether the host uses the unified hierarchy.
func (m *Manager) V2() bool { return m.v2 }

// elems are the path elements of the cgroup of qos (kubepods itself for
// Guaranteed or "").
func (m *Manager) qosElems(qos v1.PodQOSClass) []string {
	e := append(append([]string{}, m.root...), KubepodsName)
	switch qos {
	case v1.PodQOSBurstable:
		e = append(e, BurstableName)
	case v1.PodQOSBestEffort:
		e = append(e, BestEffortName)
	}
	return e
}

func (m *Manager) podElems(pod *v1.Pod) []string {
	return append(m.qosElems(QOSClass(pod)), podPrefix+string(pod.UID))
}

// PodCgroup is the pod's cgroup as the runtime's CgroupParent:
// "/kubepods/burstable/pod<uid>", or with the systemd driver
// "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice"
// (the UID's dashes as underscores).
func (m *Manager) PodCgroup(pod *v1.Pod) string {
	return m.cgroupName(m.podElems(pod))
}

// PodsCgroup is the cgroup all pods are under (kubepods), named as
// PodCgroup names a pod's: "/kubepods", or "/kubepods.slice" with the
// systemd driver; the kubelet's pod cgroup root, and the "pods" system
// container of the stats summary.
func (m *Manager) PodsCgroup() string {
	return m.cgroupName(m.qosElems(v1.PodQOSGuaranteed))
}

// cgroupName is the cgroup of elems as the runtime and Pods name it.
func (m *Manager) cgroupName(elems []string) string {
	if m.systemd {
		return "/" + path.Join(sliceNames(elems)...)
	}
	return "/" + path.Join(elems...)
}

// Close closes the systemd connection Setup opened, if any.
func (m *Manager) Close() {
	if m.ownSD && m.sd != nil {
		m.sd.Close()
	}
}

// Setup creates kubepods (limited to the allocatable when configured) and
// the QoS cgroups.
func (m *Manager) Setup(ctx context.Context) error {
	if m.systemd && m.sd == nil {
		conn, err := sddbus.NewWithContext(ctx)
		if err != nil {
			return fmt.Errorf("cgroups: connect to systemd: %w", err)
		}
		m.sd, m.ownSD = conn, true
	}
	kp := m.qosElems(v1.PodQOSGuaranteed)
	r := Resources{CPUQuota: -1, Memory: -1}
	if m.cfg.Allocatable != nil {
		r = AllocatableResources(m.cfg.Allocatable)
	}
	if err := m.ensure(ctx, kp, r, m.cfg.Allocatable != nil); err != nil {
		return err
	}
	for _, q := range []v1.PodQOSClass{v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		// QoS tiers are never capped in memory or huge pages.
		if err := m.ensure(ctx, m.qosElems(q), Resources{CPUShares: MinShares, CPUQuota: -1, Memory: -1}, false); err != nil {
			return err
		}
	}
	klog.FromContext(ctx).V(2).Info("Pod cgroups ready", "root", m.cfg.Root, "driver", m.cfg.Driver, "v2", m.v2, "allocatable", m.cfg.Allocatable != nil)
	return nil
}

// ensure creates the cgroup elems with r, timed as a create, or writes r
// to it when it exists, timed as an update (the kubelet's QoS tiers at
// start).
func (m *Manager) ensure(ctx context.Context, elems []string, r Resources, limitHuge bool) error {
	op := opUpdate
	if !m.exists(elems) {
		op = opCreate
	}
	defer m.timed(op, m.cfg.Clock.Now())
	return m.create(ctx, elems, r, limitHuge)
}

// exists reports whether the cgroup elems exists (in the first
// hierarchy).
func (m *Manager) exists(elems []string) bool {
	_, err := os.Stat(m.dir(m.roots[0], elems))
	return err == nil
}

// PodExists reports whether the pod's cgroup exists.
func (m *Manager) PodExists(pod *v1.Pod) bool {
	return m.exists(m.podElems(pod))
}

// EnsurePod creates the pod's cgroup sized by PodResources if it does not
// exist yet.
func (m *Manager) EnsurePod(ctx context.Context, pod *v1.Pod) error {
	if m.PodExists(pod) {
		return nil
	}
	r := PodResources(pod)
	r.PIDs = m.cfg.PodPIDsLimit
	start := m.cfg.Clock.Now()
	err := m.create(ctx, m.podElems(pod), r, true)
	m.timed(opCreate, start)
	if err != nil {
		return fmt.Errorf("pod cgroup %s: %w", m.PodCgroup(pod), err)
	}
	klog.FromContext(ctx).V(3).Info("Created pod cgroup", "pod", klog.KObj(pod), "cgroup", m.PodCgroup(pod))
	return nil
}

// UpdatePod writes r to the pod's existing cgroup, only the fields that
// are set (CPUShares > 0, CPUQuota != 0, Memory != 0).
func (m *Manager) UpdatePod(ctx context.Context, pod *v1.Pod, r Resources) error {
	defer m.timed(opUpdate, m.cfg.Clock.Now())
	return m.write(ctx, m.podElems(pod), r, false)
}

// PodConfig reads the pod cgroup's current CPU shares, quota and period
// and memory limit (-1 when unlimited).
func (m *Manager) PodConfig(pod *v1.Pod) (Resources, error) {
	elems := m.podElems(pod)
	r := Resources{}
	if m.v2 {
		dir := m.dir(m.roots[0], elems)
		w, err := readInt(filepath.Join(dir, "cpu.weight"))
		if err != nil {
			return r, err
		}
		r.CPUShares = sharesFromWeight(uint64(w))
		b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
		if err != nil {
			return r, err
		}
		f := strings.Fields(string(b))
		if len(f) == 2 {
			r.CPUQuota = -1
			if f[0] != "max" {
				r.CPUQuota, _ = strconv.ParseInt(f[0], 10, 64)
			}
			p, _ := strconv.ParseUint(f[1], 10, 64)
			r.CPUPeriod = p
		}
		if r.Memory, err = readInt(filepath.Join(dir, "memory.max")); err != nil {
			return r, err
		}
		return r, nil
	}
	for _, root := range m.roots {
		dir := m.dir(root, elems)
		var err error
		switch {
		case hasController(root, "cpu"):
			var s, p int64
			if s, err = readInt(filepath.Join(dir, "cpu.shares")); err == nil {
				r.CPUShares = uint64(s)
			}
			if err == nil {
				r.CPUQuota, err = readInt(filepath.Join(dir, "cpu.cfs_quota_us"))
			}
			if err == nil {
				p, err = readInt(filepath.Join(dir, "cpu.cfs_period_us"))
				r.CPUPeriod = uint64(p)
			}
		case hasController(root, "memory"):
			r.Memory, err = readInt(filepath.Join(dir, "memory.limit_in_bytes"))
			if r.Memory >= unlimitedV1 {
				r.Memory = -1
			}
		}
		if err != nil {
			return r, err
		}
	}
	return r, nil
}

// PodMemoryUsage is the memory the pod's cgroup uses now, in bytes.
func (m *Manager) PodMemoryUsage(pod *v1.Pod) (int64, error) {
	elems := m.podElems(pod)
	if m.v2 {
		return readInt(filepath.Join(m.dir(m.roots[0], elems), "memory.current"))
	}
	for _, root := range m.roots {
		if hasController(root, "memory") {
			return readInt(filepath.Join(m.dir(root, elems), "memory.usage_in_bytes"))
		}
	}
	return 0, errors.New("no memory controller")
}

// UpdateQoS sets the burstable tier's CPU shares to the summed CPU
// requests of the burstable pods among pods (the kubelet's rule; the
// besteffort tier keeps MinShares). It writes only on a change.
func (m *Manager) UpdateQoS(ctx context.Context, pods []*v1.Pod) error {
	var milli int64
	for _, p := range pods {
		if QOSClass(p) == v1.PodQOSBurstable {
			reqs := resourcehelperRequests(p)
			milli += reqs.Cpu().MilliValue()
		}
	}
	shares := SharesFromMilliCPU(milli)
	m.mu.Lock()
	defer m.mu.Unlock()
	if shares == m.burstable {
		return nil
	}
	start := m.cfg.Clock.Now()
	err := m.write(ctx, m.qosElems(v1.PodQOSBurstable), Resources{CPUShares: shares}, false)
	m.timed(opUpdate, start)
	if err != nil {
		return err
	}
	m.burstable = shares
	return nil
}

// Pods lists the pod cgroups that exist, by pod UID.
func (m *Manager) Pods() (map[types.UID]string, error) {
	out := map[types.UID]string{}
	for _, root := range m.roots {
		for _, q := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
			elems := m.qosElems(q)
			entries, err := os.ReadDir(m.dir(root, elems))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				name := e.Name()
				if m.systemd {
					if !strings.HasSuffix(name, ".slice") {
						continue
					}
					// kubepods-burstable-pod<uid>.slice: its last element
					all := elemsFromSlicePath(name)
					name = all[len(all)-1]
				}
				if uid, ok := strings.CutPrefix(name, podPrefix); ok && e.IsDir() {
					out[types.UID(uid)] = m.cgroupName(append(elems[:len(elems):len(elems)], name))
				}
			}
		}
	}
	return out, nil
}

// Destroy kills every process left in the pod cgroup named cgroup (as
// Pods lists it) and removes it from every hierarchy. A cgroup still busy
// returns an error: call again later.
func (m *Manager) Destroy(ctx context.Context, cgroup string) error {
	elems := strings.Split(strings.Trim(cgroup, "/"), "/")
	if m.systemd {
		elems = elemsFromSlicePath(cgroup)
	}
	var errs []error
	for attempt := 0; attempt < 5; attempt++ {
		pids := m.pids(elems)
		if len(pids) == 0 {
			break
		}
		errs = errs[:0]
		for _, pid := range pids {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("kill %d: %w", pid, err))
			}
		}
		if len(errs) == 0 {
			break
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("pod cgroup %s: %w", cgroup, errors.Join(errs...))
	}
	// Timed as the kubelet's: the removal, not the killing before it.
	defer m.timed(opDestroy, m.cfg.Clock.Now())
	if m.systemd && m.sd != nil {
		if err := m.stopSlice(ctx, elems); err != nil {
			return fmt.Errorf("pod cgroup %s: %w", cgroup, err)
		}
	}
	for _, root := range m.roots {
		if err := m.removeTree(m.dir(root, elems)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pod cgroup %s: %w", cgroup, err)
	}
	klog.FromContext(ctx).V(3).Info("Removed pod cgroup", "cgroup", cgroup)
	return nil
}

// pids are the processes in the cgroup elems and below it.
func (m *Manager) pids(elems []string) []int {
	set := map[int]bool{}
	for _, root := range m.roots {
		_ = filepath.WalkDir(m.dir(root, elems), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
					set[pid] = true
				}
			}
			return nil
		})
	}
	out := make([]int, 0, len(set))
	for pid := range set {
		out = append(out, pid)
	}
	sort.Ints(out)
	return out
}

// removeTree removes the cgroup directory dir and its children, deepest
// first: on a cgroup filesystem rmdir takes a cgroup's control files with
// it. plain directories (a test's stand-in) are removed as files.
func (m *Manager) removeTree(dir string) error {
	if m.plain {
		return os.RemoveAll(dir)
	}
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("remove %s: %w", dirs[i], err)
		}
	}
	return nil
}
