package podsyncer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/cgroups"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/podenv"
	"github.com/nodekit/nodekit/podsyncer/podnet"
	"github.com/nodekit/nodekit/podworkers"
)

// ErrInvalidConfig wraps every error New and NewImagePuller return for a
// bad Config.
var ErrInvalidConfig = errors.New("podsyncer: invalid config")

// Upstream defaults of the kubelet's paths.
const (
	// DefaultPodLogsDir is the kubelet's pod log root (--pod-logs-dir).
	DefaultPodLogsDir = "/var/log/pods"
	// DefaultSeccompRoot is where Localhost seccomp profiles live
	// (<root-dir>/seccomp with the default root directory).
	DefaultSeccompRoot = "/var/lib/kubelet/seccomp"
	// DefaultNodeHostsFile is the node's hosts file, the base of a
	// host-network pod's /etc/hosts.
	DefaultNodeHostsFile = "/etc/hosts"
)

// Volumes is the volume manager as the syncer uses it; *volumes.Manager
// implements it. SetUpPod runs before every sync that starts something
// (and keeps configMap, secret and token contents current); TearDownPod
// once the pod's containers are gone for good.
type Volumes interface {
	SetUpPod(ctx context.Context, pod *v1.Pod) error
	TearDownPod(ctx context.Context, uid types.UID) error
	// ContainerMounts are container c's CRI mounts, subPathExpr expanded
	// with its environment vars.
	ContainerMounts(ctx context.Context, pod *v1.Pod, c *v1.Container, vars map[string]string) ([]*runtimeapi.Mount, error)
	// PodDir is the pod's directory under the root directory; the syncer
	// keeps the pod's managed /etc/hosts there.
	PodDir(uid types.UID) string
}

// UserNamespaces allocates pods' user namespaces; *userns.Manager
// implements it. PodUserNamespace is asked for the sandbox and for every
// container (the same range each time); Release once the pod is gone.
type UserNamespaces interface {
	PodUserNamespace(ctx context.Context, pod *v1.Pod, runtimeHandler string, handlerSupportsUserNS bool) (*runtimeapi.UserNamespace, error)
	Release(ctx context.Context, uid types.UID) error
}

// Objects reads the configMaps and secrets pods reference (environment,
// image pull secrets); *objects.Cache implements it. Register is called on
// every sync of a pod that runs, Unregister once it is gone.
type Objects interface {
	podenv.Objects
	Register(ctx context.Context, pod *v1.Pod)
	Unregister(uid types.UID)
}

// States is where the syncer reads runtime state: the PLEG, whose cache
// the pod worker's barrier made fresh, and which relists one pod on demand
// after the syncer changed it. *pleg.Generator implements it.
type States interface {
	// PodStatus is the pod's runtime state as last inspected.
	PodStatus(uid types.UID) (*pleg.PodStatus, error)
	// RelistPod inspects the pod again now.
	RelistPod(ctx context.Context, uid types.UID) (pleg.RelistResult, error)
}

// StatusManager keeps the pods' statuses and writes them to the API
// server; *podstatus.Manager implements it.
type StatusManager interface {
	// PodStatus is the status last set for the pod, if any.
	PodStatus(uid types.UID) (v1.PodStatus, bool)
	// SetPodStatus sets the pod's status, to be written.
	SetPodStatus(pod *v1.Pod, status v1.PodStatus)
	// TerminatePod marks every container of the pod terminated, as the
	// kubelet does once its containers are gone.
	TerminatePod(pod *v1.Pod)
	// Finish records that the pod's worker is done with it.
	Finish(pod *v1.Pod)
}

// Cgroups is the pod cgroup tree as the syncer uses it; *cgroups.Manager
// implements it.
type Cgroups interface {
	// PodCgroup is the pod's cgroup, the sandbox's cgroup parent.
	PodCgroup(pod *v1.Pod) string
	// PodExists says whether the pod's cgroup exists.
	PodExists(pod *v1.Pod) bool
	// EnsurePod creates the pod's cgroup with its limits.
	EnsurePod(ctx context.Context, pod *v1.Pod) error
	// UpdateQoS sizes the QoS tiers for pods.
	UpdateQoS(ctx context.Context, pods []*v1.Pod) error
	// PodConfig reads the pod cgroup's limits; UpdatePod writes them.
	PodConfig(pod *v1.Pod) (cgroups.Resources, error)
	UpdatePod(ctx context.Context, pod *v1.Pod, r cgroups.Resources) error
	// PodMemoryUsage is the pod cgroup's memory usage in bytes.
	PodMemoryUsage(pod *v1.Pod) (int64, error)
	// SameShares says whether two CPU shares values are one setting on
	// this hierarchy (cgroup v2 weights round).
	SameShares(a, b uint64) bool
}

// Allocation keeps the resources allocated to pods and actuated on their
// containers, for in-place resize; *allocation.Manager implements it.
type Allocation interface {
	// Allocated is pod with its allocated resources in its spec.
	Allocated(pod *v1.Pod) *v1.Pod
	// Resize decides on the pod's pending resize, beside the others.
	Resize(ctx context.Context, pod *v1.Pod, others func() []*v1.Pod) (started, newPending bool)
	// Actuated is what was last applied to container id of pod uid;
	// SetActuated records it. PodActuated and SetPodActuated are the same
	// for the pod-level resources.
	Actuated(uid types.UID, id string) (v1.ResourceRequirements, bool)
	SetActuated(uid types.UID, id string, r v1.ResourceRequirements)
	PodActuated(uid types.UID) (*v1.ResourceRequirements, bool)
	SetPodActuated(uid types.UID, r *v1.ResourceRequirements)
	// Actuation records the outcome of applying a resize (err nil: done)
	// and says whether the resize is complete.
	Actuation(uid types.UID, err error) (completed bool)
	// Conditions are the pod's resize conditions.
	Conditions(uid types.UID) []v1.PodCondition
	// Forget drops what is kept of the pod.
	Forget(uid types.UID)
}

// Probes is the prober as the syncer uses it; *prober.Manager implements
// it.
type Probes interface {
	// ContainerState reports on the running container of the pod with
	// the given name and CRI container ID: started (it has no startup
	// probe, or that succeeded), and whether its latest liveness or
	// startup result is a failure (the syncer restarts it then).
	ContainerState(pod *v1.Pod, container, id string) (started, livenessFailed, startupFailed bool)
	// UpdatePodStatus sets Ready and Started on the container statuses.
	UpdatePodStatus(ctx context.Context, pod *v1.Pod, status *v1.PodStatus)
	// StopLivenessAndStartup stops the liveness and startup probes of a
	// pod whose containers are about to be stopped; readiness goes on. The
	// kubelet does so before it kills a terminating pod: no probe runs into
	// a container being stopped, and no failure restarts it.
	StopLivenessAndStartup(pod *v1.Pod)
}

// Node is what a pod's environment, hooks and status need from the node.
type Node interface {
	// HostIPs are the node's addresses, one per family, primary first.
	HostIPs() []string
	// Allocatable is the node's allocatable resources (the default of
	// resourceFieldRef limits); nil when not known yet.
	Allocatable() v1.ResourceList
	// MemoryCapacity is the node's memory in bytes (OOM score
	// adjustment); 0 when not known yet.
	MemoryCapacity() int64
}

// Services lists the services whose variables containers get; a
// SharedIndexInformer's store and HasSynced adapt to it.
type Services interface {
	List() ([]*v1.Service, error)
	// HasSynced is false until the services were read at least once;
	// until then API pods fail to start, as on the kubelet.
	HasSynced() bool
}

// Config configures a Syncer. Runtime, Images, RuntimeName, Status and
// Volumes are required; every other field may be left zero.
type Config struct {
	// Runtime and Images are the CRI services.
	Runtime criapi.RuntimeService
	Images  criapi.ImageManagerService
	// RuntimeName is the runtime's name (Version's RuntimeName), the
	// scheme of container IDs in the pod status ("containerd://…").
	RuntimeName string
	// Status receives every pod status the syncer computes.
	Status StatusManager
	// Volumes mounts the pod's volumes before its containers start.
	Volumes Volumes

	// States is the PLEG the syncer reads runtime state from; nil lists
	// the runtime on every sync (hosts without a PLEG, tests).
	States States
	// Probes reports probe results; nil: every container started, no
	// probe failed, readiness as if no probes.
	Probes Probes
	// Objects reads configMaps and secrets; nil fails the pods that use
	// them (loudly: CreateContainerConfigError).
	Objects Objects
	// Node gives the node's addresses and resources; nil: none known.
	Node Node
	// Services gives the service environment variables; nil: none.
	Services Services
	// RuntimeClass resolves a RuntimeClass name to its CRI handler; nil
	// fails pods that name one (FailedCreatePodSandBox).
	RuntimeClass func(ctx context.Context, name string) (string, error)
	// RecursiveReadOnlyMounts says whether the CRI runtime handler of that
	// name ("" the default) makes read-only mounts recursive: its
	// recursiveReadOnlyMounts feature as the runtime reports it
	// (crinode.Source.RuntimeHandlers), where the host lets pods use it.
	// nil: no handler does — a volumeMount's recursiveReadOnly IfPossible
	// is a plain read-only mount and Enabled fails the container with
	// CreateContainerConfigError, as on the kubelet with such a runtime.
	RecursiveReadOnlyMounts func(handler string) bool
	// UserNamespaces gives pods with hostUsers: false a user namespace of
	// their own (*userns.Manager implements it); nil fails such pods
	// loudly (FailedCreatePodSandBox) rather than run them in the host's.
	UserNamespaces UserNamespaces
	// UserNamespacesSupported says whether the CRI runtime handler of that
	// name supports user namespaces (crinode.Source.UserNamespaces); nil:
	// none does, and hostUsers: false pods fail with the kubelet's message.
	UserNamespacesSupported func(handler string) bool
	// Registerer receives the kubelet's start counters
	// (kubelet_started_pods_total, _errors_total, the user-namespaced pods'
	// and kubelet_started_containers_total{container_type},
	// _errors_total{container_type,code}) and
	// kubelet_pod_start_duration_seconds; nil: none.
	Registerer prometheus.Registerer
	// Cgroups keeps the pod cgroup tree; nil leaves cgroups to the
	// runtime's defaults (no pod-level limits, no in-place resize of the
	// pod cgroup).
	Cgroups Cgroups
	// ActivePods are the pods holding resources (QoS tiers are sized by
	// them; a resize must fit beside them). Nil: none besides the pod.
	ActivePods func() []*v1.Pod
	// Allocation keeps allocated resources for in-place resize; nil
	// disables resize (the spec's resources are used as they are).
	Allocation Allocation
	// BeforeCreate, if set, runs before each container is created (a
	// simulated runtime scripts its containers there: crisim's
	// ScriptFromPod); an error fails the start with
	// CreateContainerConfigError.
	BeforeCreate func(pod *v1.Pod, c *v1.Container) error
	// Network names the pod on the network: hostname, DNS, /etc/hosts.
	Network podnet.Config
	// Puller pulls container images; share it with the volume manager
	// for image volumes. Nil: one is built from Images, Objects,
	// PodLogsDir, Recorder and Clock with serialized pulls.
	Puller *ImagePuller
	// PodLogsDir is the pod log root; empty means DefaultPodLogsDir.
	PodLogsDir string
	// SeccompRoot holds Localhost seccomp profiles; empty means
	// DefaultSeccompRoot.
	SeccompRoot string
	// NodeHostsFile is the base of host-network pods' /etc/hosts; empty
	// means DefaultNodeHostsFile.
	NodeHostsFile string
	// MaskedPaths are the /proc and /sys paths containers see masked;
	// nil means the kubelet's list (DefaultMaskedPaths).
	MaskedPaths []string
	// Recorder receives the kubelet's pod and container events; nil
	// drops them.
	Recorder record.EventRecorder
	// InitContainers, if set, is told when each regular init container
	// starts and when the runtime reports it exited; podstartup.Tracker is
	// one (the pod startup SLI leaves init containers out). It must not
	// block.
	InitContainers InitContainerObserver
	// Clock drives back-offs and deadlines; nil means the real clock.
	Clock clock.WithTicker
}

// InitContainerObserver is what Config.InitContainers is told. Finished
// may be called again for an exit already reported.
type InitContainerObserver interface {
	InitContainerStarted(podUID types.UID, at time.Time)
	InitContainerFinished(podUID types.UID, at time.Time)
}

// Syncer is a podworkers.Syncer over a CRI runtime, the SyncPod half of
// the kubelet's kuberuntime manager. Build it with New.
type Syncer struct {
	rt              criapi.RuntimeService
	states          States
	images          criapi.ImageManagerService
	pull            *ImagePuller
	clock           clock.WithTicker
	backoff         *crashBackoff
	probes          Probes
	status          *statusWriter
	recorder        record.EventRecorder
	beforeCreate    func(pod *v1.Pod, c *v1.Container) error
	logsDir         string
	volumes         Volumes
	objects         Objects
	node            Node
	services        Services
	net             podnet.Config
	nodeHostsFile   string
	maskedPaths     func() []string
	seccompRoot     string
	runtimeHandler  func(ctx context.Context, runtimeClass string) (string, error)
	rroSupported    func(handler string) bool
	userns          UserNamespaces
	metrics         *metrics
	usernsSupported func(handler string) bool
	cgroups         Cgroups
	activePods      func() []*v1.Pod
	alloc           Allocation
	initObserver    InitContainerObserver
}

var _ podworkers.Syncer = (*Syncer)(nil)

// New validates cfg and returns a Syncer. It does no I/O.
func New(cfg Config) (*Syncer, error) {
	var errs []error
	if cfg.Runtime == nil {
		errs = append(errs, errors.New("Config.Runtime is required"))
	}
	if cfg.Images == nil {
		errs = append(errs, errors.New("Config.Images is required"))
	}
	if cfg.RuntimeName == "" {
		errs = append(errs, errors.New("Config.RuntimeName is required (the runtime's Version RuntimeName)"))
	}
	if cfg.Status == nil {
		errs = append(errs, errors.New("Config.Status is required"))
	}
	if cfg.Volumes == nil {
		errs = append(errs, errors.New("Config.Volumes is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.PodLogsDir == "" {
		cfg.PodLogsDir = DefaultPodLogsDir
	}
	if cfg.SeccompRoot == "" {
		cfg.SeccompRoot = DefaultSeccompRoot
	}
	if cfg.NodeHostsFile == "" {
		cfg.NodeHostsFile = DefaultNodeHostsFile
	}
	puller := cfg.Puller
	if puller == nil {
		p, err := NewImagePuller(ImagePullerConfig{Images: cfg.Images, Secrets: cfg.Objects, PodLogsDir: cfg.PodLogsDir,
			Recorder: cfg.Recorder, Clock: cfg.Clock})
		if err != nil {
			return nil, err
		}
		puller = p
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", ErrInvalidConfig, err)
	}
	backoff := newCrashBackoff(cfg.Clock)
	masked := sync.OnceValue(DefaultMaskedPaths) // read at the first container start, not here
	if cfg.MaskedPaths != nil {
		paths := cfg.MaskedPaths
		masked = func() []string { return paths }
	}
	s := &Syncer{rt: cfg.Runtime, states: cfg.States, images: cfg.Images, pull: puller, clock: cfg.Clock,
		backoff: backoff, probes: cfg.Probes, recorder: cfg.Recorder, beforeCreate: cfg.BeforeCreate,
		logsDir: cfg.PodLogsDir, volumes: cfg.Volumes, objects: cfg.Objects, node: cfg.Node, services: cfg.Services,
		net: cfg.Network, nodeHostsFile: cfg.NodeHostsFile, maskedPaths: masked,
		seccompRoot: filepath.Clean(cfg.SeccompRoot), runtimeHandler: cfg.RuntimeClass, rroSupported: cfg.RecursiveReadOnlyMounts, cgroups: cfg.Cgroups,
		userns: cfg.UserNamespaces, usernsSupported: cfg.UserNamespacesSupported, metrics: m,
		activePods: cfg.ActivePods, alloc: cfg.Allocation, initObserver: cfg.InitContainers}
	s.status = &statusWriter{mgr: cfg.Status, clock: cfg.Clock, runtimeName: cfg.RuntimeName, backoff: backoff,
		alloc: cfg.Allocation, hostIPs: s.hostIPs, probes: cfg.Probes, recursiveReadOnly: s.recursiveReadOnly, metrics: m}
	return s, nil
}

// hostIPs are the node's addresses, none without a Node.
func (s *Syncer) hostIPs() []string {
	if s.node == nil {
		return nil
	}
	return s.node.HostIPs()
}

// memoryCapacity is the node's memory, 0 when unknown.
func (s *Syncer) memoryCapacity() int64 {
	if s.node == nil {
		return 0
	}
	return s.node.MemoryCapacity()
}

// envPod is what container c's environment depends on besides its spec.
func (s *Syncer) envPod(pod *v1.Pod, podIPs []string) podenv.Pod {
	hostIPs := s.hostIPs()
	if pod.Spec.HostNetwork {
		podIPs = hostIPs
	}
	p := podenv.Pod{Pod: pod, HostIPs: hostIPs, PodIPs: podIPs}
	if s.node != nil {
		p.Allocatable = s.node.Allocatable()
	}
	if s.objects != nil {
		p.Objects = s.objects
	}
	if s.services != nil {
		p.Services = s.services.List
		p.ServicesSynced = s.services.HasSynced()
	}
	return p
}

// PastDeadline reports whether the pod has run longer than its
// activeDeadlineSeconds, counted from its start time on this node. The
// host's sync loop syncs such a pod at once (and SyncPod fails it).
func (s *Syncer) PastDeadline(pod *v1.Pod) bool { return s.pastDeadline(pod) }

// Reject fails a pod that admission refused: its status becomes Failed
// with reason and "Pod was rejected: " and message, as the kubelet's.
func (s *Syncer) Reject(ctx context.Context, pod *v1.Pod, reason, message string) {
	s.status.write(ctx, pod, &podRuntime{}, func(st *v1.PodStatus) {
		st.Phase, st.Reason, st.Message = v1.PodFailed, reason, "Pod was rejected: "+message
	}, false)
}
