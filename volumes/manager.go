package volumes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/internal/diskusage"
)

// ErrInvalidConfig wraps every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("volumes: invalid config")

// Config configures a Manager. Zero values are the kubelet's defaults
// where one exists.
type Config struct {
	// RootDir is the kubelet's --root-dir; pod volumes live under
	// <RootDir>/pods/<uid>/volumes/<plugin>/<name>. Required; New creates
	// it if missing.
	RootDir string
	// Objects reads configMaps and secrets (an *objects.Cache). nil
	// (standalone): pods using them fail to mount.
	Objects Objects
	// Client requests service account tokens, as the node identity. nil
	// (standalone): pods with token projections fail to mount.
	Client kubernetes.Interface
	// Allocatable returns the node's allocatable resources: the default of
	// a downward API limit the container does not set, and the size of a
	// memory-backed emptyDir. nil: none known.
	Allocatable func() v1.ResourceList
	// Mounter mounts tmpfs and subPath binds. Default HostMounter.
	Mounter Mounter
	// Recorder receives FailedMount events. nil drops them.
	Recorder record.EventRecorder
	// Clock drives the object watches, token refresh and the atomic
	// writer's names. Default the real clock.
	Clock clock.Clock
	// Images makes an image volume's image present (as its pull policy
	// says, with the pod's pull secrets) and returns the runtime's
	// reference to it, which containers mount read-only through the
	// CRI. nil: image volumes fail to mount.
	Images func(ctx context.Context, pod *v1.Pod, src *v1.ImageVolumeSource) (string, error)
	// Plugins are the host's own volume types, consulted in order before
	// the built-in ones (so one may also replace a built-in type).
	Plugins []Plugin
	// Node returns the node as last read: the labels every
	// PersistentVolume's required node affinity is checked against before
	// it is mounted (hostPath, local, or a plugin's such as csi). nil, or
	// returning nil: a PersistentVolume with node affinity is refused
	// (ErrNodeUnknown); one without is mounted.
	Node func() *v1.Node
	// UsagePeriod is how long Usage serves a pod's last measurement;
	// default DefaultUsagePeriod.
	UsagePeriod time.Duration
	// UsageTimeout is how long Usage waits for a persistent volume's
	// filesystem to answer statfs, on Clock; default DefaultUsageTimeout.
	UsageTimeout time.Duration
	// Registerer receives the kubelet's volume manager metrics (see the
	// package doc); nil: none. A registry that has them already is
	// refused by New.
	Registerer prometheus.Registerer
}

// Manager sets up, refreshes and tears down the volumes of the pods a node
// runs, each through the Plugin of its type: the host's (Config.Plugins),
// then the built-in emptyDir (disk or tmpfs), hostPath (with type checks),
// configMap, secret, downwardAPI, projected (with service account tokens)
// and image volumes (mounted by the runtime, given Config.Images). A volume
// no plugin supports is refused with a FailedMount event rather than
// started without the volume.
type Manager struct {
	cfg     Config
	tokens  *tokenCache
	plugins []Plugin

	mu sync.Mutex
	// ready holds, for each pod set up since start, the volumes set up
	// at least once: a later refresh failure of one of those only warns.
	ready map[types.UID]map[string]bool
	// mounts holds how containers mount each volume set up, by pod and
	// volume name.
	mounts map[types.UID]map[string]Mount
	// retry is each pod's mount retry delay after SetUpPod calls in a
	// row that left a volume never set up: doubling, capped, on the
	// manager's clock (client-go's keyed back-off; "Fake" in its
	// constructor's name only means the clock is the caller's).
	retry *flowcontrol.Backoff
	// volumesOf holds the volumes of each pod set up since start, and
	// usage their last measurement (Usage).
	volumesOf map[types.UID][]v1.Volume
	usage     map[types.UID]usageCache
	// claims holds, by pod and volume name, the claim of each
	// persistentVolumeClaim or generic ephemeral volume mounted, and where
	// its filesystem is (Usage).
	claims map[types.UID]map[string]claimMount
	// statfsPending holds the paths whose statfs has not returned yet;
	// statfs is diskusage.Statfs (a test's hanging one).
	statfsPending map[string]bool
	statfs        func(path string) (diskusage.Fs, error)
	// inUse holds the device-mounted volumes of each pod the Manager
	// mounts itself (local PersistentVolumes), by unique name.
	inUse map[types.UID][]v1.UniqueVolumeName
	// rwop holds the pod that mounted each ReadWriteOncePod
	// PersistentVolume, by volume name.
	rwop map[string]types.UID
	// pluginNames holds the kubelet's plugin name of each volume of the
	// pods set up since start that a plugin took (a claim once bound),
	// by pod and volume name: the desired volumes of the metrics.
	pluginNames map[types.UID]map[string]string
	metrics     *metrics
}

// The retry delays of a pod whose volume could not be set up: from 500ms
// after the first failure, doubling, as the kubelet's volume manager
// retries a mount operation, but at most the pod workers' default
// back-off (10s), so that retrying here is never slower than a failed sync.
const (
	mountRetryInitial = 500 * time.Millisecond
	mountRetryMax     = 10 * time.Second
)

// MountError is what SetUpPod returns when a volume never set up failed.
// RetryAfter (podworkers.RetryAfter) is when the pod is worth syncing
// again: a token the API server refused because its authorizer has not
// seen the pod's binding yet, or a configMap created just after the pod,
// succeed a moment later.
type MountError struct {
	Err   error
	Delay time.Duration
}

func (e *MountError) Error() string { return e.Err.Error() }

// Unwrap returns the FailedMount errors.
func (e *MountError) Unwrap() error { return e.Err }

// RetryAfter is the delay before the next attempt.
func (e *MountError) RetryAfter() time.Duration { return e.Delay }

// New checks cfg and returns a Manager. Call Stop when done.
func New(cfg Config) (*Manager, error) {
	if cfg.RootDir == "" {
		return nil, fmt.Errorf("%w: RootDir is required", ErrInvalidConfig)
	}
	if !filepath.IsAbs(cfg.RootDir) {
		return nil, fmt.Errorf("%w: RootDir %q must be absolute", ErrInvalidConfig, cfg.RootDir)
	}
	// Mount points are matched by path against /proc/self/mountinfo, which
	// shows resolved paths: resolve the root once, so that a mount under it
	// is never missed (and never deleted through).
	if err := os.MkdirAll(cfg.RootDir, 0o750); err != nil {
		return nil, fmt.Errorf("%w: RootDir: %v", ErrInvalidConfig, err)
	}
	root, err := filepath.EvalSymlinks(cfg.RootDir)
	if err != nil {
		return nil, fmt.Errorf("%w: RootDir: %v", ErrInvalidConfig, err)
	}
	cfg.RootDir = root
	if cfg.Mounter == nil {
		cfg.Mounter = HostMounter()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Allocatable == nil {
		cfg.Allocatable = func() v1.ResourceList { return nil }
	}
	for i, p := range cfg.Plugins {
		if p == nil {
			return nil, fmt.Errorf("%w: Plugins[%d] is nil", ErrInvalidConfig, i)
		}
		if err := checkName("plugin", p.Name()); p.Name() != "" && err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
	}
	if cfg.UsagePeriod < 0 {
		return nil, fmt.Errorf("%w: UsagePeriod %v is negative", ErrInvalidConfig, cfg.UsagePeriod)
	}
	if cfg.UsagePeriod == 0 {
		cfg.UsagePeriod = DefaultUsagePeriod
	}
	if cfg.UsageTimeout < 0 {
		return nil, fmt.Errorf("%w: UsageTimeout %v is negative", ErrInvalidConfig, cfg.UsageTimeout)
	}
	if cfg.UsageTimeout == 0 {
		cfg.UsageTimeout = DefaultUsageTimeout
	}
	m := &Manager{cfg: cfg, ready: map[types.UID]map[string]bool{}, mounts: map[types.UID]map[string]Mount{},
		volumesOf: map[types.UID][]v1.Volume{}, usage: map[types.UID]usageCache{}, inUse: map[types.UID][]v1.UniqueVolumeName{}, rwop: map[string]types.UID{},
		retry: flowcontrol.NewFakeBackOff(mountRetryInitial, mountRetryMax, cfg.Clock), tokens: newTokenCache(cfg.Client, cfg.Clock),
		pluginNames: map[types.UID]map[string]string{}, claims: map[types.UID]map[string]claimMount{},
		statfsPending: map[string]bool{}, statfs: diskusage.Statfs}
	m.plugins = append(append([]Plugin(nil), cfg.Plugins...), m.builtins()...)
	if m.metrics, err = newMetrics(cfg.Registerer, m); err != nil {
		return nil, err
	}
	return m, nil
}

// Objects reads configMaps and secrets; objects.Cache is one.
type Objects interface {
	ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// PodDir is the pod's directory under the root directory.
func (m *Manager) PodDir(uid types.UID) string {
	return filepath.Join(m.cfg.RootDir, "pods", string(uid))
}

// volumePath is where a volume's content is on the host: the host path
// its plugin returned, else its plugin's directory for it.
func (m *Manager) volumePath(pod *v1.Pod, v *v1.Volume) string {
	m.mu.Lock()
	mnt, ok := m.mounts[pod.UID][v.Name]
	m.mu.Unlock()
	if ok && mnt.HostPath != "" {
		return mnt.HostPath
	}
	if p := m.pluginFor(v); p != nil {
		return m.volumeDir(pod, p, v)
	}
	return ""
}

// SetUpPod mounts or refreshes every volume of pod; the pod's containers
// may start only after it returns nil. It is called on every sync of a
// running pod, which is how configMap, secret, downward API and token
// contents follow their sources (an unchanged payload writes nothing).
// Each volume that fails gets a FailedMount event with the kubelet's
// message; the error, a *MountError, names those never set up and when to
// try again (a volume that was set up once and fails to refresh keeps its
// last content and only warns, so a running pod is not held back by, say,
// a deleted secret).
func (m *Manager) SetUpPod(ctx context.Context, pod *v1.Pod) error {
	if err := checkName("pod UID", string(pod.UID)); err != nil {
		return err
	}
	m.mu.Lock()
	if m.ready[pod.UID] == nil {
		m.ready[pod.UID] = map[string]bool{}
	}
	m.volumesOf[pod.UID] = pod.Spec.Volumes
	m.mu.Unlock()
	if err := os.MkdirAll(filepath.Join(m.PodDir(pod.UID), "volumes"), 0o750); err != nil {
		return fmt.Errorf("pod directory: %w", err)
	}
	var errs []error
	mounts, devices := volumeUses(pod)
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !mounts[v.Name] && !devices[v.Name] {
			continue // as the kubelet: a volume no container mounts is not set up
		}
		err := m.setUp(ctx, pod, v)
		m.mu.Lock()
		once := m.ready[pod.UID][v.Name]
		if err == nil {
			m.ready[pod.UID][v.Name] = true
		}
		m.mu.Unlock()
		if err == nil {
			continue
		}
		msg := failedMountMessage(v.Name, err)
		if m.cfg.Recorder != nil {
			m.cfg.Recorder.Event(pod, v1.EventTypeWarning, "FailedMount", msg)
		}
		klog.FromContext(ctx).V(2).Info("Volume setup failed", "pod", klog.KObj(pod), "volume", v.Name, "setUpBefore", once, "err", err)
		if !once {
			errs = append(errs, errors.New(msg))
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(errs) == 0 {
		m.retry.DeleteEntry(string(pod.UID))
		return nil
	}
	m.retry.Next(string(pod.UID), m.cfg.Clock.Now())
	return &MountError{Err: errors.Join(errs...), Delay: m.retry.Get(string(pod.UID))}
}

// volumeUses returns the names of the pod's volumes its containers (init,
// regular and ephemeral) mount, and those they map as block devices.
func volumeUses(pod *v1.Pod) (mounts, devices map[string]bool) {
	mounts, devices = map[string]bool{}, map[string]bool{}
	add := func(c *v1.Container) {
		for _, vm := range c.VolumeMounts {
			mounts[vm.Name] = true
		}
		for _, vd := range c.VolumeDevices {
			devices[vd.Name] = true
		}
	}
	for i := range pod.Spec.InitContainers {
		add(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		add((*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return mounts, devices
}

func (m *Manager) setUp(ctx context.Context, pod *v1.Pod, v *v1.Volume) error {
	if err := checkName("volume", v.Name); err != nil {
		return err
	}
	p := m.pluginFor(v)
	if p == nil {
		return fmt.Errorf("volume type %s is not supported by this node agent", volumeType(v))
	}
	if name := pluginMetricName(p, v); name != "" {
		m.setPluginName(pod.UID, v.Name, name) // a claim's, once bound (pvcPlugin)
	}
	m.mu.Lock()
	mountedBefore := m.ready[pod.UID][v.Name]
	m.mu.Unlock()
	start := m.cfg.Clock.Now()
	mnt, err := p.SetUp(ctx, Volume{Pod: pod, Spec: v, Dir: m.volumeDir(pod, p, v)})
	// A mount operation, as the kubelet counts them: until the volume is
	// mounted, then on each sync for the types whose contents follow
	// their sources; never for a claim not bound yet.
	if name, ok := m.pluginName(pod.UID, v.Name); ok && (!mountedBefore || remounted(p)) {
		m.metrics.operation(name, opMount, m.cfg.Clock.Since(start), err)
	}
	if err != nil {
		return err
	}
	m.mu.Lock()
	if m.mounts[pod.UID] == nil {
		m.mounts[pod.UID] = map[string]Mount{}
	}
	m.mounts[pod.UID][v.Name] = mnt
	m.mu.Unlock()
	return nil
}

// setUpPayload writes an atomically updated volume of files (configMap,
// secret, downwardAPI, projected) at v.Dir, on a tmpfs if inMemory
// (secrets, tokens and pod facts live in memory, as on the kubelet).
func (m *Manager) setUpPayload(v Volume, files map[string]File, err error, inMemory bool) (Mount, error) {
	mnt := Mount{HostPath: v.Dir, ReadOnly: true}
	if err != nil {
		return mnt, err
	}
	if err := m.makeVolumeDir(v.Pod, v.Dir, inMemory); err != nil {
		return mnt, err
	}
	return mnt, m.writePayload(v.Pod, v.Dir, files)
}

// volumeType names the source a volume uses, for error messages.
func volumeType(v *v1.Volume) string {
	switch {
	case v.PersistentVolumeClaim != nil:
		return "persistentVolumeClaim"
	case v.CSI != nil:
		return "csi"
	case v.Ephemeral != nil:
		return "ephemeral"
	case v.Image != nil:
		return "image"
	case v.NFS != nil:
		return "nfs"
	case v.ISCSI != nil:
		return "iscsi"
	case v.FC != nil:
		return "fc"
	}
	return "unknown"
}

// writePayload writes an atomically updated volume, read-only to the
// pod, with the fsGroup's group read bits.
func (m *Manager) writePayload(pod *v1.Pod, dir string, payload map[string]File) error {
	var setPerms func(string) error
	if gid := FSGroup(pod); gid != nil {
		for k, f := range payload {
			f.Mode |= int32(fsGroupROMask)
			payload[k] = f
		}
		g := *gid
		setPerms = func(string) error { return setOwnership(dir, g, true) }
	}
	return atomicWrite(dir, payload, m.cfg.Clock.Now(), setPerms)
}

// makeVolumeDir creates an atomically written volume's directory (mode
// 0777, as the kubelet's emptyDir wrapper), on a tmpfs if inMemory.
func (m *Manager) makeVolumeDir(pod *v1.Pod, dir string, inMemory bool) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			return err
		}
	}
	if !inMemory {
		return nil
	}
	mounted, err := isMountPoint(m.cfg.Mounter, dir)
	if err != nil || mounted {
		return err
	}
	return m.cfg.Mounter.MountTmpfs(dir, emptyDirMemorySize(m.cfg.Allocatable()[v1.ResourceMemory], nil, pod))
}

// setUpEmptyDir makes the directory (mode 0777, as the kubelet), mounting
// a tmpfs on it for medium Memory (whose root is then 1777).
func (m *Manager) setUpEmptyDir(pod *v1.Pod, src *v1.EmptyDirVolumeSource, dir string) error {
	switch src.Medium {
	case v1.StorageMediumDefault, v1.StorageMediumMemory:
	default:
		return fmt.Errorf("emptyDir medium %q is not supported by this node agent", src.Medium)
	}
	fresh := false
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		fresh = true
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			return err
		}
	}
	if src.Medium == v1.StorageMediumMemory {
		mounted, err := isMountPoint(m.cfg.Mounter, dir)
		if err != nil {
			return err
		}
		if !mounted {
			// The root of a new tmpfs is 1777, which the kubelet leaves
			// as it is.
			fresh = true
			size := emptyDirMemorySize(m.cfg.Allocatable()[v1.ResourceMemory], src.SizeLimit, pod)
			if err := m.cfg.Mounter.MountTmpfs(dir, size); err != nil {
				return err
			}
		}
	}
	// The group is given once, when the volume is made (a fresh directory
	// never has it, whatever fsGroupChangePolicy says).
	if gid := FSGroup(pod); gid != nil && fresh {
		return setOwnership(dir, *gid, false)
	}
	return nil
}

// emptyDirMemorySize is the tmpfs size: the node's allocatable memory,
// lowered to the pod's memory limit and then to the volume's sizeLimit
// when those are smaller.
func emptyDirMemorySize(allocatable resource.Quantity, sizeLimit *resource.Quantity, pod *v1.Pod) int64 {
	size := allocatable.Value()
	lower := func(v int64) {
		if v > 0 && (size <= 0 || v <= size) {
			size = v
		}
	}
	lower(podMemoryLimit(pod))
	if sizeLimit != nil {
		lower(sizeLimit.Value())
	}
	return size
}

// podMemoryLimit is the pod's memory limit: the pod-level limit if set,
// else the sum of its containers' limits (at least the largest init
// container's) when every container has one; 0 when unbounded.
func podMemoryLimit(pod *v1.Pod) int64 {
	if pod.Spec.Resources != nil {
		if q, ok := pod.Spec.Resources.Limits[v1.ResourceMemory]; ok {
			return q.Value()
		}
	}
	var sum int64
	for _, c := range pod.Spec.Containers {
		q, ok := c.Resources.Limits[v1.ResourceMemory]
		if !ok || q.IsZero() {
			return 0
		}
		sum += q.Value()
	}
	for _, c := range pod.Spec.InitContainers {
		q, ok := c.Resources.Limits[v1.ResourceMemory]
		if !ok || q.IsZero() {
			return 0
		}
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sum += q.Value() // a sidecar runs beside the app containers
		} else {
			sum = max(sum, q.Value())
		}
	}
	return sum
}

// checkHostPath verifies (or creates) a hostPath volume's path as its type
// asks, with the kubelet's messages.
func checkHostPath(src *v1.HostPathVolumeSource) error {
	typ := v1.HostPathUnset
	if src.Type != nil {
		typ = *src.Type
	}
	p := src.Path
	info, err := os.Stat(p)
	exists := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	switch typ {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		if !exists {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			return os.Chmod(p, 0o755)
		}
		if !info.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", p)
		}
	case v1.HostPathDirectory:
		if !exists || !info.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", p)
		}
	case v1.HostPathFileOrCreate:
		if !exists {
			f, err := os.OpenFile(p, os.O_CREATE, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("hostPath type check failed: %s is not a file", p)
		}
	case v1.HostPathFile:
		if !exists || !info.Mode().IsRegular() {
			return fmt.Errorf("hostPath type check failed: %s is not a file", p)
		}
	case v1.HostPathSocket:
		if !exists || info.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a socket file", p)
		}
	case v1.HostPathCharDev:
		if !exists || info.Mode()&os.ModeCharDevice == 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a character device", p)
		}
	case v1.HostPathBlockDev:
		if !exists || info.Mode()&os.ModeDevice == 0 || info.Mode()&os.ModeCharDevice != 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a block device", p)
		}
	default:
		return fmt.Errorf("hostPath type %q is not supported", typ)
	}
	return nil
}

// TearDownPod unmounts and removes everything the pod's volumes left on
// the host: subPath binds, tmpfs mounts, and the pod's directory. It is
// safe to call again after a partial teardown (an agent restart in the
// middle of one), and for a pod never set up. A mount it did not make (a
// CSI volume of a previous kubelet, say) is never unmounted or deleted
// through: the pod's directory then stays, and the error says why.
func (m *Manager) TearDownPod(ctx context.Context, uid types.UID) error {
	if err := checkName("pod UID", string(uid)); err != nil {
		return err
	}
	m.tokens.forget(uid)
	dir := m.PodDir(uid)
	if err := m.tearDownPlugins(ctx, dir); err != nil {
		return fmt.Errorf("pod %s: %w", uid, err)
	}
	points, err := mountPointsUnder(m.cfg.Mounter, dir)
	if err != nil {
		return fmt.Errorf("list mounts: %w", err)
	}
	for _, p := range points {
		if !ownMount(dir, p, m.ownsMounts) {
			return fmt.Errorf("pod %s: %s is a mount this agent did not make; leaving the pod directory", uid, p)
		}
	}
	for _, p := range points {
		if err := m.cfg.Mounter.Unmount(p); err != nil {
			return err
		}
	}
	// Refuse to delete through a mount: check again, and never cross a
	// filesystem boundary while removing.
	if points, err = mountPointsUnder(m.cfg.Mounter, dir); err != nil || len(points) > 0 {
		return fmt.Errorf("pod %s still has mounts %v (%v)", uid, points, err)
	}
	if err := removeOneFilesystem(dir); err != nil {
		return fmt.Errorf("remove pod directory: %w", err)
	}
	m.mu.Lock()
	delete(m.ready, uid)
	delete(m.mounts, uid)
	delete(m.volumesOf, uid)
	delete(m.usage, uid)
	delete(m.claims, uid)
	delete(m.inUse, uid)
	delete(m.pluginNames, uid)
	for pv, owner := range m.rwop {
		if owner == uid {
			delete(m.rwop, pv)
		}
	}
	m.retry.DeleteEntry(string(uid))
	m.mu.Unlock()
	klog.FromContext(ctx).V(3).Info("Pod volumes torn down", "podUID", uid)
	return nil
}

// tearDownPlugins has each TearDowner tear down its volumes of the pod
// whose directory is podDir.
func (m *Manager) tearDownPlugins(ctx context.Context, podDir string) error {
	for _, p := range m.plugins {
		td, ok := p.(TearDowner)
		if !ok || p.Name() == "" {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(podDir, "volumes", p.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		uid := types.UID(filepath.Base(podDir))
		for _, e := range entries {
			name, ok := m.pluginName(uid, e.Name())
			if !ok { // set up by an earlier run: the driver is not known
				name = strings.ReplaceAll(p.Name(), "~", "/")
			}
			start := m.cfg.Clock.Now()
			err := td.TearDown(ctx, filepath.Join(podDir, "volumes", p.Name(), e.Name()))
			m.metrics.operation(name, opUnmount, m.cfg.Clock.Since(start), err)
			if err != nil {
				return fmt.Errorf("volume %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}

// markInUse records a pod's device-mounted volume.
func (m *Manager) markInUse(uid types.UID, name v1.UniqueVolumeName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.inUse[uid], name) {
		m.inUse[uid] = append(m.inUse[uid], name)
	}
}

// InUse lists the volumes in use on the node in the attach/detach sense,
// by unique name, sorted: the node status's volumesInUse. They are the
// local PersistentVolumes of the pods set up and not torn down (as the
// kubelet, which device-mounts them, lists them) and what each Plugin that
// is an InUseReporter lists (CSI persistent volumes).
func (m *Manager) InUse() []v1.UniqueVolumeName {
	var out []v1.UniqueVolumeName
	m.mu.Lock()
	for _, names := range m.inUse {
		out = append(out, names...)
	}
	m.mu.Unlock()
	for _, p := range m.plugins {
		if r, ok := p.(InUseReporter); ok {
			out = append(out, r.InUse()...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ownMount reports whether a mount point under a pod directory is one
// this package makes: a subPath bind, or a mount in the directory of a
// plugin that owns its mounts (the tmpfs of an emptyDir, secret,
// projected or downwardAPI volume).
func ownMount(podDir, p string, owns func(plugin string) bool) bool {
	rel, err := filepath.Rel(podDir, p)
	if err != nil {
		return false
	}
	parts := strings.Split(rel, string(os.PathSeparator))
	switch {
	case parts[0] == "volume-subpaths" && len(parts) == 4:
		return true
	case parts[0] == "volumes" && len(parts) == 3:
		return owns(parts[1])
	}
	return false
}

// CleanupOrphans tears down every pod directory under the root directory
// whose pod keep does not know and that this Manager has not set up: what
// an agent that stopped before a teardown left behind.
func (m *Manager) CleanupOrphans(ctx context.Context, keep func(types.UID) bool) error {
	entries, err := os.ReadDir(filepath.Join(m.cfg.RootDir, "pods"))
	if errors.Is(err, os.ErrNotExist) {
		m.metrics.swept(0, 0)
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	found, failed := 0, 0
	for _, e := range entries {
		uid := types.UID(e.Name())
		if !e.IsDir() || keep(uid) {
			continue
		}
		m.mu.Lock()
		_, busy := m.ready[uid]
		m.mu.Unlock()
		if busy {
			continue
		}
		found++
		if err := m.TearDownPod(ctx, uid); err != nil {
			failed++
			errs = append(errs, err)
		}
	}
	m.metrics.swept(found, failed)
	return errors.Join(errs...)
}
