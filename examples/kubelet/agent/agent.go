package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit/nodekit/admission"
	"github.com/nodekit/nodekit/allocation"
	"github.com/nodekit/nodekit/basemetrics"
	"github.com/nodekit/nodekit/cgroups"
	"github.com/nodekit/nodekit/containergc"
	"github.com/nodekit/nodekit/criinstrument"
	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/eviction"
	"github.com/nodekit/nodekit/imagegc"
	"github.com/nodekit/nodekit/internal/diskusage"
	"github.com/nodekit/nodekit/kubeclient"
	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/lease"
	"github.com/nodekit/nodekit/logrotate"
	"github.com/nodekit/nodekit/nodecerts"
	"github.com/nodekit/nodekit/nodeclaim"
	"github.com/nodekit/nodekit/nodestatus"
	"github.com/nodekit/nodekit/nodestatus/crinode"
	"github.com/nodekit/nodekit/objects"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/pluginwatch"
	"github.com/nodekit/nodekit/podhandler"
	"github.com/nodekit/nodekit/podmanager"
	"github.com/nodekit/nodekit/podstartup"
	"github.com/nodekit/nodekit/podstatus"
	"github.com/nodekit/nodekit/podsyncer"
	"github.com/nodekit/nodekit/podsyncer/podnet"
	"github.com/nodekit/nodekit/podworkers"
	"github.com/nodekit/nodekit/prober"
	"github.com/nodekit/nodekit/stats"
	"github.com/nodekit/nodekit/syncloop"
	"github.com/nodekit/nodekit/userns"
	"github.com/nodekit/nodekit/volumes"
	"github.com/nodekit/nodekit/volumes/csi"
)

// Agent is a running node agent. Build it with New and call Run once.
type Agent struct {
	opts     Options
	client   kubernetes.Interface // nil standalone
	kube     kubeclient.Interface // client for the node-path blocks; nil standalone
	recorder record.EventRecorder
	events   record.EventBroadcaster
	registry *prometheus.Registry

	sim       *crisim.Sim
	stopSim   func()
	tempDir   string // removed on close
	rt        criapi.RuntimeService
	images    criapi.ImageManagerService
	criNode   *crinode.Source  // the runtime's status, handlers and features
	userns    *userns.Manager  // pods' user namespace ranges
	runtimeID string           // the runtime's name, the containerID scheme
	claim     *nodeclaim.Claim // one live agent per node (cluster mode)

	pleg       *pleg.Generator
	workers    *podworkers.Workers
	probes     *prober.Manager
	loop       *syncloop.Loop
	evict      *eviction.Manager
	admit      admission.Chain
	nodeStatus *nodestatus.Controller
	lease      *lease.Controller
	statusMgr  *podstatus.Manager
	startup    *podstartup.Tracker
	syncer     *podsyncer.Syncer
	summary    eviction.SummaryProvider
	objects    *objects.Cache // nil standalone
	services   cache.SharedIndexInformer
	volumes    *volumes.Manager
	// csi mounts CSI volumes through the drivers the plugin watcher
	// registers in csiDrivers; nil standalone and on the simulator.
	csi        *csi.Plugin
	csiDrivers *csi.Drivers
	plugins    *pluginwatch.Watcher
	registered chan struct{} // closed once the Node is registered
	onceReg    sync.Once
	cgroups    *cgroups.Manager // nil on the simulator or without pod cgroups
	alloc      *allocation.Manager
	api        *kubeletapi.Server
	serving    *nodecerts.Serving // the API's certificate from the cluster; nil without ServerTLSBootstrap
	apiPort    int                // the bound kubelet API port, 0 when disabled
	listeners  []net.Listener     // the API's, closed on close if Run never took them

	pods *podmanager.Manager

	handler *podhandler.Handler
	// hardEviction are the hard eviction thresholds, held back from
	// allocatable with the reservations.
	hardEviction []eviction.Threshold
	gc           *containergc.Collector
	imageGC      *imagegc.Manager
	logs         *logrotate.Manager // nil on the simulator
}

// New connects to the runtime (starting the simulator if asked) and builds
// every component. Nothing runs until Run.
func New(ctx context.Context, opts Options) (*Agent, error) {
	if err := opts.defaults(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a := &Agent{opts: opts, registry: opts.Registry, pods: podmanager.New()}
	if a.registry == nil {
		a.registry = prometheus.NewRegistry()
	}
	if err := basemetrics.Register(basemetrics.Config{Registerer: a.registry, NodeName: opts.NodeName,
		Version: nodestatus.DefaultKubeletVersion}); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if opts.Kube != nil {
		kube := rest.CopyConfig(opts.Kube)
		if kube.QPS == 0 {
			kube.QPS = DefaultKubeAPIQPS
		}
		if kube.Burst == 0 {
			kube.Burst = DefaultKubeAPIBurst
		}
		cs, err := kubernetes.NewForConfig(kube)
		if err != nil {
			return nil, fmt.Errorf("agent: client: %w", err)
		}
		a.client, a.kube = cs, clientset.Wrap(cs)
		a.events = record.NewBroadcaster(record.WithContext(ctx))
		a.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
		a.recorder = a.events.NewRecorder(scheme(), v1.EventSource{Component: "kubelet", Host: opts.NodeName})
	} else {
		a.recorder = &record.FakeRecorder{} // standalone: events are dropped
	}
	if opts.RuntimeEndpoint != "" {
		if err := cgroups.CheckHost("", "", opts.FailSwapOn, opts.FailCgroupV1); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	}
	if err := a.connectRuntime(ctx); err != nil {
		a.close(ctx)
		return nil, err
	}
	if err := a.build(ctx); err != nil {
		a.close(ctx)
		return nil, err
	}
	return a, nil
}

// connectRuntime dials the CRI endpoint, serving the simulator first if no
// endpoint was given.
func (a *Agent) connectRuntime(ctx context.Context) error {
	endpoint := a.opts.RuntimeEndpoint
	if endpoint == "" {
		a.sim = a.opts.Sim
		if a.sim == nil {
			a.sim = crisim.New(crisim.Config{Clock: a.opts.Clock})
		}
		dir := a.opts.StateDir
		if dir == "" {
			d, err := os.MkdirTemp("", "nodekit-agent-")
			if err != nil {
				return fmt.Errorf("agent: state dir: %w", err)
			}
			dir, a.tempDir = d, d
		} else if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("agent: state dir: %w", err)
		}
		if a.opts.PodLogsDir == "" {
			a.opts.PodLogsDir = filepath.Join(dir, "pods")
		}
		if a.opts.RootDir == "" {
			a.opts.RootDir = filepath.Join(dir, "root")
		}
		ep, stop, err := a.sim.ListenAndServe(filepath.Join(dir, "crisim.sock"))
		if err != nil {
			return fmt.Errorf("agent: serve the CRI simulator: %w", err)
		}
		endpoint, a.stopSim = ep, stop
	}
	logger := klog.FromContext(ctx)
	if path, ok := strings.CutPrefix(endpoint, "unix://"); ok && a.sim == nil {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("agent: no container runtime at %s (is containerd running?): %w", endpoint, err)
		}
	}
	// Every CRI call is counted and timed (kubelet_runtime_operations_*).
	crim, err := criinstrument.New(criinstrument.Config{Registerer: a.registry, Clock: a.opts.Clock})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	rt, err := remote.NewRemoteRuntimeService(ctx, endpoint, runtimeTimeout, nil, false)
	if err != nil {
		return fmt.Errorf("agent: runtime %s: %w", endpoint, err)
	}
	a.rt = crim.Runtime(rt)
	img, err := remote.NewRemoteImageService(ctx, endpoint, runtimeTimeout, nil, false)
	if err != nil {
		return fmt.Errorf("agent: image service %s: %w", endpoint, err)
	}
	a.images = crim.Images(img)
	v, err := a.rt.Version(ctx, "v1")
	if err != nil {
		return fmt.Errorf("agent: runtime %s does not answer: %w", endpoint, err)
	}
	a.runtimeID = v.RuntimeName
	logger.Info("Connected to container runtime", "endpoint", endpoint, "runtime", v.RuntimeName, "version", v.RuntimeVersion)
	if a.sim == nil {
		a.cgroupDriverFromRuntime(ctx)
	}
	return nil
}

// cgroupDriverFromRuntime takes the runtime's cgroup driver when it
// reports one (CRI RuntimeConfig), as the kubelet does since v1.34: the
// two must agree, and the runtime's is the one in effect.
func (a *Agent) cgroupDriverFromRuntime(ctx context.Context) {
	logger := klog.FromContext(ctx)
	rc, err := a.rt.RuntimeConfig(ctx)
	if err != nil || rc.GetLinux() == nil {
		logger.V(2).Info("The runtime does not report its cgroup driver; using the configured one", "driver", a.opts.CgroupDriver, "err", err)
		return
	}
	driver := cgroups.DriverCgroupfs
	if rc.GetLinux().GetCgroupDriver() == runtimeapi.CgroupDriver_SYSTEMD {
		driver = cgroups.DriverSystemd
	}
	if driver != a.opts.CgroupDriver && !(driver == cgroups.DriverCgroupfs && a.opts.CgroupDriver == "") {
		logger.Info("Using the cgroup driver the runtime reports", "driver", driver, "configured", a.opts.CgroupDriver)
	}
	a.opts.CgroupDriver = driver
}

// close releases what New acquired.
func (a *Agent) close(ctx context.Context) {
	if a.cgroups != nil {
		a.cgroups.Close()
	}
	if c, ok := a.rt.(interface{ Close(context.Context) error }); ok {
		_ = c.Close(ctx)
	}
	if c, ok := a.images.(interface{ Close(context.Context) error }); ok {
		_ = c.Close(ctx)
	}
	for _, ln := range a.listeners {
		_ = ln.Close()
	}
	if a.stopSim != nil {
		a.stopSim()
	}
	if a.tempDir != "" {
		_ = os.RemoveAll(a.tempDir)
	}
	if a.events != nil {
		a.events.Shutdown()
	}
	if a.objects != nil {
		a.objects.Stop()
	}
	if a.csiDrivers != nil {
		a.csiDrivers.Close()
	}
}

// build wires the blocks.
func (a *Agent) build(ctx context.Context) error {
	var err error
	// The handlers report recursive read-only mounts and user namespaces
	// where the runtime gives them; the pod syncer honours both.
	if a.criNode, err = crinode.New(crinode.Config{Runtime: a.rt, Images: a.images, RecursiveReadOnlyMounts: true,
		UserNamespaces: true}); err != nil {
		return err
	}
	// Pods' user namespace ranges: from the kubelet user's subordinate IDs
	// (the default range without one), kept in the pod directories.
	if a.userns, err = userns.New(userns.Config{RootDir: a.opts.RootDir}); err != nil {
		return err
	}
	// Events and probe results go straight to the sync loop (built below,
	// before anything runs).
	if a.pleg, err = pleg.New(pleg.Config{Runtime: a.rt, Evented: a.opts.Evented, RuntimeName: a.runtimeID,
		Sink: a.onPLEGEvent, Clock: a.opts.Clock, Registerer: a.registry}); err != nil {
		return err
	}
	if a.probes, err = prober.New(prober.Config{Runner: a.rt, Recorder: a.recorder, Sink: a.onProbeResult,
		Clock: a.opts.Clock, Registerer: a.registry}); err != nil {
		return err
	}
	// The pod startup SLI: the pod source, the status writer, the image
	// puller and the syncer each tell it their part.
	logger := klog.FromContext(ctx)
	if a.startup, err = podstartup.New(podstartup.Config{Clock: a.opts.Clock, Registerer: a.registry, Logger: &logger}); err != nil {
		return err
	}
	if a.statusMgr, err = podstatus.New(podstatus.Config{Client: a.kube, Clock: a.opts.Clock, Registerer: a.registry,
		CouldHaveRunningContainers: func(uid types.UID) bool { return a.workers.CouldHaveRunningContainers(uid) },
		Observer:                   a.startup}); err != nil {
		return err
	}
	mounter := volumes.HostMounter()
	if a.sim != nil {
		mounter = volumes.DirOnly() // simulated containers never read the host
	}
	var objs volumes.Objects
	if a.client != nil {
		if a.objects, err = objects.New(objects.Config{Client: a.client, Clock: a.opts.Clock}); err != nil {
			return err
		}
		objs = a.objects
		a.services = newServiceInformer(a.client)
	}
	if err := a.buildCgroups(); err != nil {
		return err
	}
	if a.alloc, err = allocation.New(allocation.Config{Allocatable: a.allocatable,
		Admit: func(ctx context.Context, pod *v1.Pod, others []*v1.Pod) kubetypes.AdmitResult {
			return a.admit.Admit(ctx, admission.Attributes{Pod: pod, OtherPods: others})
		}}); err != nil {
		return err
	}
	puller, err := podsyncer.NewImagePuller(podsyncer.ImagePullerConfig{Images: a.images, Secrets: objs,
		MaxParallelPulls: a.opts.MaxParallelImagePulls, PodLogsDir: a.opts.PodLogsDir, Recorder: a.recorder, Clock: a.opts.Clock,
		Pulls: a.startup, Registerer: a.registry})
	if err != nil {
		return err
	}
	var plugins []volumes.Plugin
	if a.client != nil && a.sim == nil {
		if err := a.buildCSI(mounter); err != nil {
			return err
		}
		plugins = append(plugins, a.csi)
	}
	if a.volumes, err = volumes.New(volumes.Config{RootDir: a.opts.RootDir, Objects: objs, Client: a.client,
		Allocatable: a.allocatable, Mounter: mounter, Recorder: a.recorder, Clock: a.opts.Clock, Plugins: plugins,
		Images: puller.ImageVolume, Node: func() *v1.Node { n, _ := a.admissionNode(ctx, false); return n },
		Registerer: a.registry}); err != nil {
		return err
	}
	syncCfg := podsyncer.Config{Runtime: a.rt, Images: a.images, RuntimeName: a.runtimeID, Status: a.statusMgr,
		Volumes: a.volumes, Puller: puller, States: a.pleg, Probes: a.probes, Node: nodeView{a},
		ActivePods: a.activePods, Allocation: a.alloc, InitContainers: a.startup, RecursiveReadOnlyMounts: a.criNode.RecursiveReadOnlyMounts,
		UserNamespaces: a.userns, UserNamespacesSupported: a.criNode.UserNamespaces, Registerer: a.registry,
		PodLogsDir: a.opts.PodLogsDir, SeccompRoot: filepath.Join(a.opts.RootDir, "seccomp"), Recorder: a.recorder, Clock: a.opts.Clock,
		Network: podnet.Config{ClusterDNS: a.opts.ClusterDNS, ClusterDomain: a.opts.ClusterDomain, ResolvConf: a.opts.ResolvConf}}
	if a.sim != nil {
		syncCfg.BeforeCreate = a.sim.ScriptFromPod
	}
	if a.cgroups != nil { // a nil *cgroups.Manager is not a nil Cgroups
		syncCfg.Cgroups = a.cgroups
	}
	if a.client != nil {
		syncCfg.Objects, syncCfg.RuntimeClass = a.objects, a.runtimeHandler
		syncCfg.Services = serviceList{a.services}
	}
	if a.syncer, err = podsyncer.New(syncCfg); err != nil {
		return err
	}
	if a.workers, err = podworkers.New(podworkers.Config{Syncer: a.syncer, StatusBarrier: a.pleg.Cache().WaitNewerThan,
		Clock: a.opts.Clock, Recorder: a.recorder, Registerer: a.registry}); err != nil {
		return err
	}
	if a.sim == nil {
		if a.logs, err = logrotate.New(logrotate.Config{Runtime: a.rt, MaxSize: a.opts.ContainerLogMaxSize,
			MaxFiles: a.opts.ContainerLogMaxFiles, MaxWorkers: a.opts.ContainerLogMaxWorkers,
			MonitorInterval: a.opts.ContainerLogMonitorInterval, Clock: a.opts.Clock}); err != nil {
			return err
		}
	}
	// Container GC keeps everything until every source said what it
	// wants (the loop is built below, before anything runs).
	if a.gc, err = containergc.NewCollector(containergc.CollectorConfig{Runtime: a.rt, Clock: a.opts.Clock, PodLogsDir: a.opts.PodLogsDir,
		PodExists:    func(uid types.UID) bool { _, ok := a.pods.Get(uid); return ok },
		SourcesReady: func() bool { return a.loop.SourcesReady() }, RemoveContainerLogs: a.removeContainerLogs}); err != nil {
		return err
	}
	if a.imageGC, err = imagegc.New(imagegc.Config{Images: a.images, Containers: a.rt, ImageFs: a.imageFs,
		HighThresholdPercent: a.opts.ImageGCHighThresholdPercent, LowThresholdPercent: a.opts.ImageGCLowThresholdPercent,
		MinAge: a.opts.ImageMinimumGCAge, MaxAge: a.opts.ImageMaximumGCAge,
		Recorder: a.recorder, NodeRef: a.nodeRef(), Clock: a.opts.Clock, Registerer: a.registry}); err != nil {
		return err
	}
	if err := a.buildEviction(); err != nil {
		return err
	}
	// The kubelet's volume stats and container log families on /metrics.
	volumeStats, err := stats.NewCollector(stats.CollectorConfig{Summary: a.summary, Context: ctx})
	if err != nil {
		return err
	}
	if err := a.registry.Register(volumeStats); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if err := a.buildAdmission(ctx); err != nil {
		return err
	}
	if err := a.buildAPI(); err != nil {
		return err
	}
	if a.client != nil {
		// The lease gets its owner reference from the node status
		// controller the moment the Node is registered (OnRegistered).
		if a.lease, err = lease.New(lease.Config{Client: a.kube, NodeName: a.opts.NodeName,
			Clock: a.opts.Clock, Registerer: a.registry}); err != nil {
			return err
		}
		if err := a.buildNodeStatus(ctx); err != nil {
			return err
		}
	}
	return a.buildLoop()
}

// nodeView is the node as the pod syncer sees it: the last reported
// Node, else the configured address and memory.
type nodeView struct{ a *Agent }

func (n nodeView) HostIPs() []string            { return n.a.hostIPs() }
func (n nodeView) Allocatable() v1.ResourceList { return n.a.allocatable() }
func (n nodeView) MemoryCapacity() int64        { return n.a.memoryCapacity() }

// newServiceInformer watches every service, for the containers'
// environment (one informer rather than client-go's factory, which links
// every API group's informers into the binary).
func newServiceInformer(client kubernetes.Interface) cache.SharedIndexInformer {
	svcs := client.CoreV1().Services(metav1.NamespaceAll)
	lw := &cache.ListWatch{
		ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return svcs.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return svcs.Watch(ctx, o) },
	}
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &v1.Service{}, 0, cache.Indexers{})
	// Only names, ports and cluster IPs are read.
	_ = inf.SetTransform(func(obj any) (any, error) {
		if s, ok := obj.(*v1.Service); ok {
			s.ManagedFields = nil
		}
		return obj, nil
	})
	return inf
}

// serviceList lists the services the informer holds.
type serviceList struct{ inf cache.SharedIndexInformer }

func (l serviceList) HasSynced() bool { return l.inf.HasSynced() }

func (l serviceList) List() ([]*v1.Service, error) {
	var out []*v1.Service
	for _, o := range l.inf.GetStore().List() {
		if s, ok := o.(*v1.Service); ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// hostIPs are the node's InternalIPs as last reported, else the
// configured node IP.
func (a *Agent) hostIPs() []string {
	var ips []string
	if a.nodeStatus != nil {
		if n := a.nodeStatus.Node(); n != nil {
			// One per family, the first InternalIP, else ExternalIP.
			var v4, v6 string
			for _, t := range []v1.NodeAddressType{v1.NodeInternalIP, v1.NodeExternalIP} {
				for _, addr := range n.Status.Addresses {
					ip := net.ParseIP(addr.Address)
					if addr.Type != t || ip == nil {
						continue
					}
					if ip.To4() != nil && v4 == "" {
						v4 = addr.Address
					} else if ip.To4() == nil && v6 == "" {
						v6 = addr.Address
					}
				}
			}
			for _, ip := range []string{v4, v6} {
				if ip != "" {
					ips = append(ips, ip)
				}
			}
		}
	}
	if len(ips) == 0 && a.opts.NodeIP != "" {
		ips = []string{a.opts.NodeIP}
	}
	return ips
}

// memoryCapacity is the node's memory capacity as last reported.
func (a *Agent) memoryCapacity() int64 {
	if a.nodeStatus != nil {
		if n := a.nodeStatus.Node(); n != nil {
			return n.Status.Capacity.Memory().Value()
		}
	}
	return a.opts.MemoryCapacity
}

// allocatable is the node's allocatable resources as last reported.
func (a *Agent) allocatable() v1.ResourceList {
	if a.nodeStatus != nil {
		if n := a.nodeStatus.Node(); n != nil {
			return n.Status.Allocatable
		}
	}
	return nil
}

// runtimeHandler reads a RuntimeClass (the node identity may) and returns
// its CRI handler.
func (a *Agent) runtimeHandler(ctx context.Context, name string) (string, error) {
	rc, err := a.client.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("runtime class %q: %w", name, err)
	}
	return rc.Handler, nil
}

func (a *Agent) buildEviction() error {
	thresholds, err := eviction.ParseThresholdFlags(a.opts.EvictionHard, "", "", "")
	if err != nil {
		return err
	}
	a.hardEviction = thresholds // all hard: no soft thresholds are configured
	sc := stats.Config{NodeName: a.opts.NodeName, NodeFsPath: a.opts.RootDir, Runtime: a.rt, Clock: a.opts.Clock,
		PodLogsDir: a.opts.PodLogsDir, PodVolumes: a.podVolumes}
	if a.cgroups != nil {
		sc.PodsCgroup = a.cgroups.PodsCgroup() // the "pods" system container, as the kubelet's
	}
	host, err := stats.New(sc)
	if err != nil {
		return err
	}
	a.summary = host
	if a.sim != nil {
		a.summary = &simSummary{inner: host, capacity: a.opts.MemoryCapacity}
	}
	a.evict, err = eviction.New(eviction.Config{
		Thresholds: thresholds, Summary: a.summary, ActivePods: a.activePods, KillPod: a.workers.KillPodNow,
		PodCleanedUp:             func(p *v1.Pod) bool { return a.workers.ShouldPodBeFinished(p.UID) },
		DeleteUnusedContainers:   a.gc.Collect,
		DeleteUnusedImages:       a.imageGC.DeleteUnusedImages,
		PressureTransitionPeriod: a.opts.EvictionPressureTransitionPeriod,
		Recorder:                 a.recorder, NodeRef: a.nodeRef(), Clock: a.opts.Clock, Registerer: a.registry,
	})
	return err
}

// removeContainerLogs removes a container's log files before container GC
// removes it (with a real runtime; the simulator's go with their pod's
// log directory).
func (a *Agent) removeContainerLogs(ctx context.Context, id string) error {
	if a.logs == nil {
		return nil
	}
	return a.logs.Clean(ctx, id)
}

// imageFs is the size and free space of the filesystem the runtime keeps
// its images on (the mountpoint its ImageFsInfo names), else (a simulated
// runtime's made-up mountpoint) of the root directory's, for image garbage
// collection.
func (a *Agent) imageFs(ctx context.Context) (imagegc.FsStats, error) {
	paths := []string{a.opts.RootDir}
	if info, err := a.images.ImageFsInfo(ctx); err == nil {
		for _, fs := range info.GetImageFilesystems() {
			if mp := fs.GetFsId().GetMountpoint(); mp != "" {
				paths = []string{mp, a.opts.RootDir}
				break
			}
		}
	}
	var errs []error
	for _, p := range paths {
		st, err := diskusage.Statfs(p)
		if err == nil {
			return imagegc.FsStats{CapacityBytes: st.Capacity, AvailableBytes: st.Available}, nil
		}
		errs = append(errs, fmt.Errorf("image filesystem %s: %w", p, err))
	}
	return imagegc.FsStats{}, errors.Join(errs...)
}

// podVolumes is what the volume manager measured of a pod's volumes, for
// the summary (eviction, /stats/summary, kubelet_volume_stats_*).
func (a *Agent) podVolumes(uid string) []stats.PodVolume {
	var out []stats.PodVolume
	for _, u := range a.volumes.Usage(types.UID(uid)) {
		v := stats.PodVolume{Name: u.Name, UsedBytes: u.UsedBytes, InodesUsed: u.InodesUsed,
			CapacityBytes: u.CapacityBytes, AvailableBytes: u.AvailableBytes, Inodes: u.Inodes, InodesFree: u.InodesFree,
			LocalEphemeral: u.LocalEphemeral, Time: u.Time}
		if u.PVC != nil {
			v.PVCRef = &statsapi.PVCReference{Namespace: u.PVC.Namespace, Name: u.PVC.Name}
		}
		out = append(out, v)
	}
	return out
}

// cgroupMount is where the host's cgroups are mounted: the pod cgroup
// tree's and /metrics/cadvisor's.
const cgroupMount = "/sys/fs/cgroup"

// buildCgroups prepares the pod cgroup tree (created when Run starts):
// with a real runtime unless disabled, capped at capacity − system − kube
// reserved when node allocatable is enforced.
func (a *Agent) buildCgroups() error {
	if a.sim != nil || a.opts.DisableCgroupsPerQOS {
		return nil
	}
	cfg := cgroups.Config{Mount: cgroupMount, Driver: a.opts.CgroupDriver, Root: a.opts.CgroupRoot, PodPIDsLimit: a.opts.PodPIDsLimit, Clock: a.opts.Clock, Registerer: a.registry}
	if a.opts.EnforceNodeAllocatable == EnforcePods {
		machine, _ := a.machine()
		info, err := machine()
		if err != nil {
			return fmt.Errorf("agent: machine info for node allocatable: %w", err)
		}
		// The kubepods cgroup gets capacity − system − kube reserved (the
		// eviction thresholds stay within it, as upstream).
		cfg.Allocatable = nodestatus.CapacityFromMachine(info)
		cfg.Allocatable = subtract(cfg.Allocatable, nodestatus.AddResources(a.opts.SystemReserved, a.opts.KubeReserved))
	}
	var err error
	a.cgroups, err = cgroups.New(cfg)
	return err
}

func (a *Agent) nodeRef() *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: a.opts.NodeName, UID: types.UID(a.opts.NodeName)}
}

// activePods are the pods admitted to this node that may still hold
// resources, as the kubelet's GetActivePods: not rejected, not in a
// terminal phase, not known terminated (a terminating pod is active).
func (a *Agent) activePods() []*v1.Pod {
	return a.pods.Active(a.workers.IsPodKnownTerminated)
}

func (a *Agent) buildLoop() error {
	var sources []syncloop.Source
	var errs []error
	add := func(src syncloop.Source, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		sources = append(sources, src)
	}
	if a.client != nil {
		add(syncloop.NewAPIServerSource(syncloop.APIServerSourceConfig{Client: a.client, NodeName: a.opts.NodeName, Clock: a.opts.Clock}))
	}
	if a.opts.PodManifestPath != "" {
		add(syncloop.NewFileSource(syncloop.FileSourceConfig{Path: a.opts.PodManifestPath, NodeName: a.opts.NodeName,
			Recorder: a.recorder, Clock: a.opts.Clock}))
	}
	if a.opts.ManifestURL != "" {
		add(syncloop.NewHTTPSource(syncloop.HTTPSourceConfig{URL: a.opts.ManifestURL, NodeName: a.opts.NodeName,
			Recorder: a.recorder, Clock: a.opts.Clock}))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var err error
	cfg := podhandler.Config{Workers: a.workers, Pods: a.pods, Admit: a.admit, Reject: a.syncer, Probes: a.probes,
		Statuses: a.statusMgr, Runtime: a.rt, Deadlines: a.syncer, Recorder: a.recorder, Clock: a.opts.Clock,
		Orphans: []podhandler.OrphanCleaner{a.volumes, a.userns}, Registerer: a.registry}
	if a.csi != nil { // after the pods' volumes: what no pod uses any more
		cfg.Orphans = append(cfg.Orphans, csiCleanup{a.csi})
	}
	if a.cgroups != nil {
		cfg.Orphans = append(cfg.Orphans, cgroupCleanup{a.cgroups, a.activePods})
	}
	if a.client != nil {
		cfg.MirrorClient, cfg.Node = a.client.CoreV1(), a.nodeStatus
	}
	if a.handler, err = podhandler.New(cfg); err != nil {
		return err
	}
	a.loop, err = syncloop.New(syncloop.Config{
		Handler: a.handler, Sources: sources,
		RuntimeHealth: a.pleg.Healthy,
		PodsToSync:    a.handler.PodsToSync,
		PodByUID:      a.handler.PodByUID,
		OnPodObserved: a.startup.ObservedOnWatch,
		Recorder:      a.recorder, Clock: a.opts.Clock, Registerer: a.registry,
	})
	return err
}

// buildCSI builds the CSI volume plugin and the registration of CSI
// drivers from <root-dir>/plugins_registry.
func (a *Agent) buildCSI(mounter volumes.Mounter) error {
	var err error
	if a.csiDrivers, err = csi.NewDrivers(csi.DriversConfig{Client: a.client, NodeName: a.opts.NodeName, Clock: a.opts.Clock}); err != nil {
		return err
	}
	if a.csi, err = csi.New(csi.Config{RootDir: a.opts.RootDir, NodeName: a.opts.NodeName, Drivers: a.csiDrivers,
		Client: a.client, Mounter: mounter, Clock: a.opts.Clock}); err != nil {
		return err
	}
	a.plugins, err = pluginwatch.New(pluginwatch.Config{Dir: filepath.Join(a.opts.RootDir, "plugins_registry"),
		Handlers: map[string]pluginwatch.Handler{registerapi.CSIPlugin: a.csiDrivers}, Clock: a.opts.Clock})
	a.registered = make(chan struct{})
	return err
}

// runPlugins registers node plugins once the Node exists (a driver's
// registration writes its CSINode entry and the Node's annotation).
func (a *Agent) runPlugins(ctx context.Context) error {
	select {
	case <-a.registered:
	case <-ctx.Done():
		return nil
	}
	if err := a.csiDrivers.InitCSINode(ctx); err != nil {
		klog.FromContext(ctx).Info("CSINode not created yet (the first driver registration will)", "err", err)
	}
	return a.plugins.Run(ctx)
}

// csiCleanup unstages the CSI volumes no pod uses any more.
type csiCleanup struct{ p *csi.Plugin }

func (c csiCleanup) CleanupOrphans(ctx context.Context, _ func(types.UID) bool) error {
	return c.p.CleanupStaged(ctx)
}

// cgroupCleanup sizes the QoS tiers for the pods that remain, then
// removes the cgroups of pods that are gone (their stragglers killed).
type cgroupCleanup struct {
	cg     *cgroups.Manager
	active func() []*v1.Pod
}

func (c cgroupCleanup) CleanupOrphans(ctx context.Context, keep func(types.UID) bool) error {
	if err := c.cg.UpdateQoS(ctx, c.active()); err != nil {
		klog.FromContext(ctx).Error(err, "Update QoS cgroups")
	}
	pods, err := c.cg.Pods()
	if err != nil {
		return fmt.Errorf("list pod cgroups: %w", err)
	}
	for uid, cg := range pods {
		if keep(uid) {
			continue
		}
		if err := c.cg.Destroy(ctx, cg); err != nil {
			klog.FromContext(ctx).V(2).Info("Pod cgroup not removed yet", "uid", uid, "err", err)
		}
	}
	return nil
}

// subtract is capacity less reserved, never below zero.
func subtract(capacity, reserved v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for name, q := range capacity {
		q = q.DeepCopy()
		if r, ok := reserved[name]; ok {
			q.Sub(r)
		}
		if q.Sign() < 0 {
			q.Set(0)
		}
		out[name] = q
	}
	return out
}
