package pleg

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/internal/parking"
)

// Generator is the pod lifecycle event generator. Relist and RelistPod are
// its synchronous core; Run drives them on a timer, on requests and, in
// evented mode, on runtime events. Relist and RelistPod serialize on one
// lock: they are the only writers of the cache and of the pod records, so
// state is never duplicated or reordered. All methods are safe for
// concurrent use.
type Generator struct {
	cfg   Config
	rt    RuntimeService
	clock clock.WithTicker
	cache *Cache
	em    *emitter
	m     *metrics

	// relistMu guards everything below up to healthMu: the single writer.
	relistMu sync.Mutex
	records  map[types.UID]*podRecord
	sbIndex  map[string]*podRecord // sandbox ID → record, rebuilt each relist
	gen      uint64
	scratch  []PodLifecycleEvent

	healthMu   sync.Mutex
	lastRelist time.Time // start of the last completed full relist
	lastErr    error     // error of the last failed full relist, nil after a success

	streamUp atomic.Bool // evented mode: the event stream is connected
	running  atomic.Bool
	parked   parking.State // Run's waiting state, for NextWake

	reqMu    sync.Mutex
	requests map[types.UID]time.Time // single-pod relists requested, with when
	fullReq  bool                    // a full relist is requested
	// reinspect holds the pods to inspect again at the next relist even
	// if unchanged (RequestReinspect), with when it was asked: a pod not
	// known yet keeps its request until it appears, for RelistThreshold.
	reinspect map[types.UID]time.Time
	reqWake   chan struct{} // capacity 1
}

// New validates cfg and returns a Generator with an empty cache.
func New(cfg Config) (*Generator, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Cache == nil {
		cfg.Cache = NewCache()
	}
	if !cfg.Cache.own() {
		return nil, fmt.Errorf("%w: Config.Cache is already written by another Generator", ErrInvalidConfig)
	}
	m, err := newMetrics(cfg.Registerer, cfg.Cache)
	if err != nil {
		return nil, err
	}
	g := &Generator{
		cfg:       cfg,
		rt:        cfg.Runtime,
		clock:     cfg.Clock,
		cache:     cfg.Cache,
		em:        newEmitter(cfg.EventChannelCapacity, cfg.DeliverContainerChanged, m),
		m:         m,
		records:   map[types.UID]*podRecord{},
		sbIndex:   map[string]*podRecord{},
		requests:  map[types.UID]time.Time{},
		reinspect: map[types.UID]time.Time{},
		reqWake:   make(chan struct{}, 1),
	}
	g.em.sink = cfg.Sink
	if cfg.Evented {
		// While events flow, a pod's status changes only when an event says
		// so; a caller waiting for fresher data gets it from a single-pod
		// relist instead of waiting for the safety-net relist.
		g.cache.onWait = func(uid types.UID) {
			if g.streamUp.Load() {
				g.RequestRelist(uid)
			}
		}
	}
	return g, nil
}

// Events returns the channel events are delivered on when Config.Sink is
// nil. There is one consumer. When it falls behind, events are coalesced
// into a PodSync per pod (see the package doc), never dropped silently.
// With a Sink the channel stays empty.
func (g *Generator) Events() <-chan PodLifecycleEvent { return g.em.out }

// Cache returns the pod status cache the generator writes.
func (g *Generator) Cache() *Cache { return g.cache }

// PodStatus is the pod's runtime state in the cache (Cache().Get).
func (g *Generator) PodStatus(uid types.UID) (*PodStatus, error) { return g.cache.Get(uid) }

// CoalescedEvents returns how many events were not delivered individually
// because the Events channel was full (each was folded into a PodSync for
// its pod). It is the kubelet_pleg_discard_events counter.
func (g *Generator) CoalescedEvents() uint64 { return g.em.count.Load() }

// Healthy reports whether a full relist completed within the threshold:
// RelistThreshold, or EventedRelistThreshold while the event stream is
// connected. The error wraps ErrUnhealthy and says how long ago the last
// relist was and, if relisting fails, why.
func (g *Generator) Healthy() error {
	g.healthMu.Lock()
	last, lastErr := g.lastRelist, g.lastErr
	g.healthMu.Unlock()
	if last.IsZero() {
		return withCause(fmt.Errorf("%w: pleg has yet to be successful", ErrUnhealthy), lastErr)
	}
	g.m.seen(last)
	threshold := g.cfg.RelistThreshold
	if g.cfg.Evented && g.streamUp.Load() {
		threshold = g.cfg.EventedRelistThreshold
	}
	if elapsed := g.clock.Since(last); elapsed > threshold {
		return withCause(fmt.Errorf("%w: pleg was last seen active %v ago; threshold is %v", ErrUnhealthy, elapsed, threshold), lastErr)
	}
	return nil
}

func withCause(err, cause error) error {
	if cause == nil {
		return err
	}
	return fmt.Errorf("%w (last relist error: %w)", err, cause)
}

// markRelisted records the outcome of a full relist started at start.
func (g *Generator) markRelisted(start time.Time, err error) {
	g.healthMu.Lock()
	defer g.healthMu.Unlock()
	g.lastErr = err
	if err == nil {
		g.lastRelist = start
	}
}

func (g *Generator) lastRelistTime() time.Time {
	g.healthMu.Lock()
	defer g.healthMu.Unlock()
	return g.lastRelist
}

// RequestRelist asks Run for an on-demand relist of one pod. It never
// blocks; requests for the same pod coalesce, and a request is skipped if a
// full relist starts after it was made.
func (g *Generator) RequestRelist(uid types.UID) {
	now := g.clock.Now()
	g.reqMu.Lock()
	if _, ok := g.requests[uid]; !ok {
		g.requests[uid] = now
	}
	g.reqMu.Unlock()
	g.signal()
}

// RequestReinspect marks a pod to be inspected again by the next relist
// (full or of that pod) even if nothing about it changed; that relist then
// refreshes its cached status and emits a PodSync for it, which makes the
// sync loop sync the pod (upstream's reinspection, e.g. after an in-place
// resize that could not be actuated yet). A pod the Generator does not know
// yet keeps the request until a relist finds it, for at most
// Config.RelistThreshold. It never blocks and does not itself trigger a
// relist.
func (g *Generator) RequestReinspect(uid types.UID) {
	now := g.clock.Now()
	g.reqMu.Lock()
	if _, ok := g.reinspect[uid]; !ok {
		g.reinspect[uid] = now
	}
	g.reqMu.Unlock()
}

// takeReinspections moves the requested reinspections onto the known
// records; requests for pods not known yet wait, until they expire.
// relistMu must be held.
func (g *Generator) takeReinspections() {
	now := g.clock.Now()
	g.reqMu.Lock()
	defer g.reqMu.Unlock()
	for uid, asked := range g.reinspect {
		rec, ok := g.records[uid]
		switch {
		case ok:
			rec.reinspect = true
		case now.Sub(asked) <= g.cfg.RelistThreshold:
			continue // not listed yet: ask again at the next relist
		}
		delete(g.reinspect, uid)
	}
}

func (g *Generator) requestFull() {
	g.reqMu.Lock()
	g.fullReq = true
	g.reqMu.Unlock()
	g.signal()
}

func (g *Generator) signal() {
	g.parked.Wake()
	select {
	case g.reqWake <- struct{}{}:
	default:
	}
}

// takeRequests returns and clears the pending requests.
func (g *Generator) takeRequests() (full bool, pods map[types.UID]time.Time) {
	g.reqMu.Lock()
	defer g.reqMu.Unlock()
	full = g.fullReq
	g.fullReq = false
	if len(g.requests) == 0 {
		return full, nil
	}
	pods = g.requests
	g.requests = map[types.UID]time.Time{}
	return full, pods
}

var errAlreadyRunning = errors.New("pleg: Run called twice")
