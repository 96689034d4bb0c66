package virtualnode

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/lease"
	"github.com/nodekit/nodekit/podworkers"
)

// Agent runs many virtual nodes in one process: one lease controller for all
// of them, one nodestatus controller per node (synced by a bounded pool),
// one pod watch (a reflector into the pod cache) and one set of pod workers.
// Build it with New and call Run once.
type Agent struct {
	cfg     Config
	managed map[string]int // node name -> index
	nodes   []*node
	leases  *lease.Controller
	workers *podworkers.Workers
	cache   *podCache // pods and the status the API has of each
	// sharedPods: cache is run by the caller (Sharded).
	sharedPods bool
	// podEvents counts the cache's deliveries; lastHousekeeping is
	// the count and time of the last housekeeping pass (loop goroutine).
	podEvents        atomic.Uint64
	lastHousekeeping struct {
		events uint64
		at     time.Time
	}
	syncer *syncer
	// lagLimit: pod writes wait while a renewal is this overdue.
	lagLimit time.Duration
	running  atomic.Bool
	started  time.Time // when Run started: the nodes' stats start time
	// dispatch serialises the cache's pod deliveries with housekeeping,
	// as the kubelet's one sync loop goroutine does: a pod delivered between
	// housekeeping's snapshot of the cache and its SyncKnownPods would
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

// newAgent is New; pods, if set, is a pod cache the caller runs and
// shares among agents (Sharded), to which Run only adds its handlers.
func newAgent(cfg Config, pods *podCache) (*Agent, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, managed: make(map[string]int, len(cfg.Nodes))}
	for i, name := range cfg.Nodes {
		a.managed[name] = i
	}
	var err error
	a.leases, err = lease.New(lease.Config{Client: cfg.HeartbeatClient, Names: cfg.Nodes,
		LeaseDuration: cfg.LeaseDuration, InitialSpread: cfg.LeaseSpread, BatchWindow: max(cfg.LeaseBatchWindow, 0),
		Workers: cfg.LeaseWorkers, Clock: cfg.Clock, Registerer: cfg.Registerer})
	if err != nil {
		return nil, fmt.Errorf("virtualnode: lease: %w", err)
	}
	a.lagLimit = a.leases.RenewInterval() / 5
	common := newNodeCommon(&a.cfg)
	for i, name := range cfg.Nodes {
		n, err := newNode(&a.cfg, common, i, name, &a.apiPort, a.leases.SetNodeUID)
		if err != nil {
			return nil, err
		}
		a.nodes = append(a.nodes, n)
	}
	a.cache, a.sharedPods = pods, pods != nil
	if pods == nil {
		a.cache = newPodCache(cfg, func(node string) bool { _, ok := a.managed[node]; return ok })
	}
	a.syncer = &syncer{cfg: &a.cfg, cache: a.cache, hostIP: a.hostIP, yield: a.yieldToLeases}
	a.workers, err = podworkers.New(podworkers.Config{Syncer: a.syncer, MaxConcurrentSyncs: cfg.MaxConcurrentSyncs,
		ResyncInterval: cfg.PodResyncInterval, LookupPod: a.lookupPod, Clock: cfg.Clock, Registerer: cfg.Registerer})
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

// runAll runs fns in goroutines and waits for all of them.
func runAll(ctx context.Context, fns ...func(context.Context)) {
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Go(func() { fn(ctx) })
	}
	wg.Wait()
}
