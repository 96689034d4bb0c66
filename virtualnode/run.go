package virtualnode

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/nodestatus"
	"github.com/nodekit/nodekit/podworkers"
)

// ErrAlreadyRunning is returned by a second Run.
var ErrAlreadyRunning = errors.New("virtualnode: already running")

// Loop periods, as the kubelet's sync loop: due pods every second,
// housekeeping every two.
const (
	tickPeriod        = time.Second
	housekeepingTicks = 2
	// housekeepingMaxGap bounds the time between two housekeeping passes
	// when no pod changed.
	housekeepingMaxGap = 30 * time.Second
	nodeRetryDelay     = time.Second
	notReadySyncPeriod = time.Second
	// Heartbeats first: a pod write waits while a lease renewal is more
	// than a fifth of the renew interval overdue (Agent.lagLimit: 2s with the
	// kubelet's 40s lease; the API server is too busy for the renewals),
	// polling every yieldPoll, for at most maxYield.
	yieldPoll = 100 * time.Millisecond
	maxYield  = 10 * time.Second
)

// Run registers the nodes, keeps their leases and status, runs their pods
// and serves the kubelet API (Config.API) until ctx is done. It returns nil
// after a clean stop, with every goroutine it started ended; an error if the
// API's address cannot be bound (before anything starts) or the server
// fails (everything stops). It may be called once.
func (a *Agent) Run(ctx context.Context) error {
	if !a.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	a.started = a.cfg.Clock.Now()
	if a.api != nil {
		// Bound before the nodes report their status, which carries the port.
		if err := a.bindAPI(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logger := klog.FromContext(ctx)
	if n, ok := a.cfg.Provider.(PodNotifier); ok {
		n.NotifyPods(func(uid types.UID) { a.sync(ctx, uid) })
	}
	handlers := &podHandlers{
		added:   func(e *podEntry) { a.onPod(ctx, e, podworkers.UpdateCreate) },
		updated: func(e *podEntry) { a.onPod(ctx, e, podworkers.UpdateUpdate) },
		deleted: func(e *podEntry) { a.onPodDeleted(ctx, e) },
	}
	a.cache.addHandlers(handlers)
	if a.sharedPods {
		defer a.cache.removeHandlers(handlers)
	}
	logger.Info("Starting virtual nodes", "nodes", len(a.nodes))
	work := make(chan *node, len(a.nodes))
	fns := []func(context.Context){
		func(ctx context.Context) { _ = a.leases.Run(ctx) },
		func(ctx context.Context) { _ = a.workers.Run(ctx) },
		func(ctx context.Context) { a.loop(ctx, work) },
	}
	if !a.sharedPods {
		fns = append(fns, a.cache.run)
	}
	for range a.cfg.StatusWorkers {
		fns = append(fns, func(ctx context.Context) { a.statusWorker(ctx, work) })
	}
	var apiErr error
	if a.api != nil {
		fns = append(fns, func(ctx context.Context) {
			// The server fails only if it cannot serve: stop the agent,
			// as a kubelet exits.
			if apiErr = a.api.Run(ctx); apiErr != nil {
				cancel()
			}
		})
	}
	runAll(ctx, fns...)
	if apiErr != nil {
		logger.Error(apiErr, "Stopped virtual nodes: the kubelet API failed")
		return fmt.Errorf("virtualnode: kubelet API: %w", apiErr)
	}
	logger.Info("Stopped virtual nodes")
	return nil
}

// onPod delivers an added or updated pod of a managed node to the workers.
func (a *Agent) onPod(ctx context.Context, e *podEntry, t podworkers.UpdateType) {
	a.podEvents.Add(1)
	pod := a.managedPod(e)
	if pod == nil {
		return
	}
	a.dispatch.Lock()
	defer a.dispatch.Unlock()
	if err := a.workers.UpdatePod(ctx, podworkers.Update{Type: t, Pod: pod, StartTime: a.cfg.Clock.Now()}); err != nil {
		klog.FromContext(ctx).Error(err, "Pod update rejected", "pod", klog.KObj(pod))
	}
}

// onPodDeleted kills a pod removed from the API (usually after the agent's
// own final delete, when the pod is already finished and this is a no-op).
func (a *Agent) onPodDeleted(ctx context.Context, e *podEntry) {
	a.podEvents.Add(1)
	pod := a.managedPod(e)
	if pod == nil {
		return
	}
	a.dispatch.Lock()
	defer a.dispatch.Unlock()
	if err := a.workers.UpdatePod(ctx, podworkers.Update{Type: podworkers.UpdateKill, Pod: pod}); err != nil {
		klog.FromContext(ctx).Error(err, "Pod kill rejected", "pod", klog.KObj(pod))
	}
}

func (a *Agent) managesNode(name string) bool {
	_, ok := a.managed[name]
	return ok
}

// managedPod decodes the pod of an entry if it is bound to a node of this
// agent (the cache may be shared by shards); nil otherwise.
func (a *Agent) managedPod(e *podEntry) *v1.Pod {
	if e != nil && a.managesNode(e.nodeName()) {
		return a.cache.decode(e)
	}
	return nil
}

// lookupPod is the workers' LookupPod: the latest pod of a managed node
// with that UID, decoded afresh, or nil.
func (a *Agent) lookupPod(uid types.UID) *v1.Pod {
	if e := a.cache.entry(uid); e != nil && a.managesNode(e.nodeName()) {
		return a.cache.decode(e)
	}
	return nil
}

// sync asks for a sync of uid with its latest pod, or a resync of the last
// known one if the pod left the cache.
func (a *Agent) sync(ctx context.Context, uid types.UID) {
	if pod := a.lookupPod(uid); pod != nil {
		_ = a.workers.UpdatePod(ctx, podworkers.Update{Type: podworkers.UpdateSync, Pod: pod})
		return
	}
	_ = a.workers.Resync(uid) // unknown to the workers: nothing to do
}

// yieldToLeases holds a pod write back while the lease renewals are
// behind (lease.Controller.Lag), for at most maxYield: the pods' API traffic
// shares the API server with the heartbeats, and a node whose lease expires
// is lost with all its pods, while a pod's status reported a few seconds
// late is only late. (Kubelets get this from API priority and fairness,
// where node heartbeats have their own priority level; an agent using one
// credential for many nodes does not.)
func (a *Agent) yieldToLeases(ctx context.Context) {
	if a.leases.Lag() <= a.lagLimit {
		return
	}
	deadline := a.cfg.Clock.Now().Add(maxYield)
	for a.leases.Lag() > a.lagLimit && a.cfg.Clock.Now().Before(deadline) {
		t := a.cfg.Clock.NewTimer(yieldPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// loop ticks every second: due pods, housekeeping, and node status syncs
// handed to the status workers. It wakes for nothing else: a thousand
// nodes finish a thousand syncs a period, and the workers mark them idle
// themselves.
func (a *Agent) loop(ctx context.Context, work chan<- *node) {
	t := a.cfg.Clock.NewTicker(tickPeriod)
	defer t.Stop()
	for tick := 0; ; tick++ {
		now := a.cfg.Clock.Now()
		for _, n := range a.nodes {
			if !n.busy.Load() && !now.Before(n.due) {
				n.busy.Store(true)
				work <- n // buffered for every node: never blocks
			}
		}
		if a.cache.hasSynced() {
			for _, uid := range a.workers.DuePods() {
				a.sync(ctx, uid)
			}
			if tick%housekeepingTicks == 0 && a.housekeepingDue(now) {
				a.housekeeping(ctx)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// housekeepingDue: a pod changed in the cache since the last pass, or
// the last one is housekeepingMaxGap old. The pass costs a walk of every
// pod; with nothing changed it has nothing to find but finished workers to
// forget, which can wait.
func (a *Agent) housekeepingDue(now time.Time) bool {
	events := a.podEvents.Load()
	if events == a.lastHousekeeping.events && now.Sub(a.lastHousekeeping.at) < housekeepingMaxGap {
		return false
	}
	a.lastHousekeeping.events, a.lastHousekeeping.at = events, now
	return true
}

// housekeeping reconciles the workers with the pods of the agent's nodes
// in the cache: pods gone are forgotten (or terminated), pods missing are
// (re)started.
func (a *Agent) housekeeping(ctx context.Context) {
	a.dispatch.Lock()
	defer a.dispatch.Unlock()
	mine := a.cache.podsOn(a.cfg.Nodes...)
	desired := make(sets.Set[types.UID], len(mine))
	for _, e := range mine {
		desired.Insert(e.uid)
	}
	known := a.workers.SyncKnownPods(ctx, desired)
	for _, e := range mine {
		if _, ok := known[e.uid]; !ok {
			if pod := a.cache.decode(e); pod != nil {
				_ = a.workers.UpdatePod(ctx, podworkers.Update{Type: podworkers.UpdateCreate, Pod: pod})
			}
		}
	}
}

// statusWorker syncs node status and schedules the node's next sync:
// every second until it is reported Ready (the kubelet's fast start-up
// path), then every StatusUpdateFrequency.
func (a *Agent) statusWorker(ctx context.Context, work <-chan *node) {
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-work:
			res, err := n.ctl.Sync(ctx)
			next := a.cfg.StatusUpdateFrequency
			switch {
			case err != nil && !errors.Is(err, nodestatus.ErrSetters):
				if ctx.Err() == nil {
					klog.FromContext(ctx).Error(err, "Node status sync failed", "node", n.name)
				}
				next = nodeRetryDelay
			case !res.Ready:
				next = notReadySyncPeriod
			}
			n.due = a.cfg.Clock.Now().Add(next)
			n.busy.Store(false) // hands due back to the loop
		}
	}
}
