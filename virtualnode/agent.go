package virtualnode

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/lease"
	"github.com/nodekit/nodekit/podworkers"
)

// Informer indexes.
const (
	byUID  = "uid"
	byNode = "node"
)

// Agent runs many virtual nodes in one process: one lease controller for all
// of them, one nodestatus controller per node (synced by a bounded pool),
// one pod informer and one set of pod workers. Build it with New and call
// Run once.
type Agent struct {
	cfg     Config
	managed map[string]int // node name -> index
	nodes   []*node
	leases  *lease.Controller
	workers *podworkers.Workers
	pods    cache.SharedIndexInformer
	// sharedPods: pods is run by the caller (Sharded); podsSynced tells
	// whether this agent's handlers saw every pod once.
	sharedPods bool
	podsSynced func() bool
	// podEvents counts the informer's deliveries; lastHousekeeping is
	// the count and time of the last housekeeping pass (loop goroutine).
	podEvents        atomic.Uint64
	lastHousekeeping struct {
		events uint64
		at     time.Time
	}
	syncer  *syncer
	running atomic.Bool
	started time.Time // when Run started: the nodes' stats start time
	// dispatch serialises the informer's pod deliveries with housekeeping,
	// as the kubelet's one sync loop goroutine does: a pod delivered between
	// housekeeping's snapshot of the informer and its SyncKnownPods would
	// otherwise be terminated as unknown (seen: 9 of 10,000 pods created at
	// 200/s completed at once).
	dispatch sync.Mutex
	// The kubelet API, nil when not served; apiPort is its bound port
	// (set by Run before the nodes report status).
	api     *kubeletapi.Server
	apiLn   *lazyListener
	apiPort atomic.Int32
}

// New validates cfg and builds the agent; nothing talks to the API server
// before Run.
func New(cfg Config) (*Agent, error) { return newAgent(cfg, nil) }

// newAgent is New; pods, if set, is a pod informer the caller runs and
// shares among agents (Sharded), which Run only adds its handlers to.
func newAgent(cfg Config, pods cache.SharedIndexInformer) (*Agent, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, managed: make(map[string]int, len(cfg.Nodes))}
	for i, name := range cfg.Nodes {
		a.managed[name] = i
	}
	var err error
	a.leases, err = lease.New(lease.Config{Client: cfg.HeartbeatClient.CoordinationV1(), Names: cfg.Nodes,
		LeaseDuration: cfg.LeaseDuration, InitialSpread: cfg.LeaseSpread, Workers: cfg.LeaseWorkers, Clock: cfg.Clock, Registerer: cfg.Registerer})
	if err != nil {
		return nil, fmt.Errorf("virtualnode: lease: %w", err)
	}
	for i, name := range cfg.Nodes {
		n, err := newNode(&a.cfg, i, name, &a.apiPort, a.leases.SetNodeUID)
		if err != nil {
			return nil, err
		}
		a.nodes = append(a.nodes, n)
	}
	a.pods, a.sharedPods = pods, pods != nil
	if pods == nil {
		a.pods = newPodInformer(cfg)
	}
	a.syncer = &syncer{cfg: &a.cfg, pods: a.pods.GetIndexer(), hostIP: a.hostIP, patched: make(map[types.UID][]byte)}
	a.workers, err = podworkers.New(podworkers.Config{Syncer: a.syncer, MaxConcurrentSyncs: cfg.MaxConcurrentSyncs,
		ResyncInterval: cfg.PodResyncInterval, Clock: cfg.Clock, Registerer: cfg.Registerer})
	if err != nil {
		return nil, fmt.Errorf("virtualnode: podworkers: %w", err)
	}
	if cfg.API != nil {
		if err := a.buildAPI(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Nodes returns the names of the virtual nodes.
func (a *Agent) Nodes() []string { return append([]string(nil), a.cfg.Nodes...) }

func (a *Agent) hostIP(nodeName string) string { return a.cfg.NodeIP(a.managed[nodeName]) }

// newPodInformer watches every pod bound to some node (one watch for all
// virtual nodes: a field selector cannot name several nodes); the handlers
// and the desired set filter on the managed names.
func newPodInformer(cfg Config) cache.SharedIndexInformer {
	sel := fields.OneTermNotEqualSelector("spec.nodeName", "").String()
	pods := cfg.Client.CoreV1().Pods(v1.NamespaceAll)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return pods.Watch(ctx, o)
		},
	}
	// The wrapper keeps the client's word on watch-list support (fake
	// clientsets have none).
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, cfg.Client), &v1.Pod{}, 0, cache.Indexers{
		byUID: func(obj any) ([]string, error) {
			if p, ok := obj.(*v1.Pod); ok {
				return []string{string(p.UID)}, nil
			}
			return nil, nil
		},
		byNode: func(obj any) ([]string, error) {
			if p, ok := obj.(*v1.Pod); ok {
				return []string{p.Spec.NodeName}, nil
			}
			return nil, nil
		},
	})
	// The agent never reads managed fields: do not keep them in memory. A
	// shallow copy, because the decoded object may be shared with the
	// client (fake clientsets hand out their stored objects).
	_ = inf.SetTransform(func(obj any) (any, error) {
		if p, ok := obj.(*v1.Pod); ok && p.ManagedFields != nil {
			q := *p
			q.ManagedFields = nil
			return &q, nil
		}
		return obj, nil
	})
	return inf
}

// podByUID returns the informer's copy of a pod, or nil.
func podByUID(idx cache.Indexer, uid types.UID) *v1.Pod {
	objs, err := idx.ByIndex(byUID, string(uid))
	if err != nil || len(objs) == 0 {
		return nil
	}
	p, _ := objs[0].(*v1.Pod)
	return p
}

// runAll runs fns in goroutines and waits for all of them.
func runAll(ctx context.Context, fns ...func(context.Context)) {
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Go(func() { fn(ctx) })
	}
	wg.Wait()
}
