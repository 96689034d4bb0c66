package syncloop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/internal/retry"
	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/prober"
)

// Loop routes pod configuration, PLEG events, probe results, periodic syncs
// and housekeeping to a Handler. Producers (sources, Set, HandlePLEGEvent,
// HandleProbeUpdate) never block: they record their input in mailboxes that
// the loop drains. Create it with New.
type Loop struct {
	cfg     Config
	sources []string
	merger  *merger
	metrics *metrics
	in      *Inbox       // the producers' mailboxes, Config.Inbox
	last    atomic.Int64 // unix nanoseconds of the last completed pass

	// Loop-goroutine state (Iterate is not reentrant).
	iterMu      sync.Mutex
	indexMu     sync.RWMutex // guards index: the loop writes, PodByUID reads
	index       map[types.UID]*v1.Pod
	dispatched  map[string]bool
	nextSync    time.Time
	nextHK      time.Time
	backoff     time.Duration
	unhealthy   bool
	scratchPods []*v1.Pod
}

type deadContainer struct {
	pod types.UID
	id  containerid.ID
}

type probeKey struct {
	probe       prober.ProbeType
	containerID containerid.ID
}

// New validates cfg, fills in defaults and returns a Loop.
func New(cfg Config) (*Loop, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	in := cfg.Inbox
	if in == nil {
		in = NewInbox()
	}
	if !in.taken.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("%w: the Inbox belongs to another Loop", ErrInvalidConfig)
	}
	in.metrics.Store(m)
	l := &Loop{
		cfg:        cfg,
		metrics:    m,
		in:         in,
		index:      map[types.UID]*v1.Pod{},
		dispatched: map[string]bool{},
	}
	for _, s := range cfg.Sources {
		l.sources = append(l.sources, s.Name())
	}
	l.sources = append(l.sources, cfg.ExternalSources...)
	l.merger = newMerger(cfg.Clock.Now, cfg.Recorder, l.enqueueConfig)
	l.merger.observe = cfg.OnPodObserved
	return l, nil
}

func (l *Loop) enqueueConfig(ups []PodUpdate) {
	l.in.mu.Lock()
	l.in.configQ = append(l.in.configQ, ups...)
	l.in.mu.Unlock()
	l.metrics.queued("config", len(ups))
	l.in.wake()
}

// Set replaces the snapshot of the named source with pods and queues the
// resulting updates. It never blocks and may be called from any goroutine;
// it never modifies pods and may keep parts of them (SetFunc). Sources
// in Config.Sources receive it as their SetFunc; hosts call it for the
// names in Config.ExternalSources.
func (l *Loop) Set(ctx context.Context, source string, pods []*v1.Pod) {
	l.merger.set(ctx, source, pods)
}

// HandlePLEGEvent is Inbox.HandlePLEGEvent of the loop's Inbox.
func (l *Loop) HandlePLEGEvent(e pleg.PodLifecycleEvent) { l.in.HandlePLEGEvent(e) }

// HandleProbeUpdate is Inbox.HandleProbeUpdate of the loop's Inbox.
func (l *Loop) HandleProbeUpdate(probe prober.ProbeType, u prober.Update) {
	l.in.HandleProbeUpdate(probe, u)
}

// SourcesReady is Inbox.SourcesReady of the loop's Inbox.
func (l *Loop) SourcesReady() bool { return l.in.SourcesReady() }

func (l *Loop) allDispatched() bool {
	for _, s := range l.sources {
		if !l.dispatched[s] {
			return false
		}
	}
	return true
}

// LastIteration is when the loop last completed a pass (upstream's
// syncLoopMonitor), zero before the first. A host's health endpoint reports
// the loop stuck when it is too old. Safe for concurrent use.
func (l *Loop) LastIteration() time.Time {
	n := l.last.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Iterate is one synchronous pass of the loop, the core Run is built on:
//
//  1. If RuntimeHealth reports an error, nothing is dispatched (queued
//     input stays queued) and the returned delay is the next backoff step.
//  2. Otherwise queued config updates are dispatched in order, then the
//     pods with PLEG events or probe results are synced (one
//     HandlePodSyncs call, each pod once), after OnContainerDied and
//     OnProbeResult hooks.
//  3. If the sync period elapsed, PodsToSync is asked and its pods synced.
//  4. If the housekeeping period elapsed and all sources are ready,
//     HandlePodCleanups runs.
//
// It returns the delay until timed work is next due. Iterate must not be
// called concurrently with itself or Run.
func (l *Loop) Iterate(ctx context.Context) time.Duration {
	l.iterMu.Lock()
	defer l.iterMu.Unlock()
	logger := klog.FromContext(ctx)
	now := l.cfg.Clock.Now()
	if l.nextSync.IsZero() {
		l.nextSync = now.Add(l.cfg.SyncPeriod)
		l.nextHK = now.Add(l.cfg.HousekeepingPeriod)
	}
	defer func() { l.last.Store(l.cfg.Clock.Now().UnixNano()) }()

	if err := l.runtimeHealth(); err != nil {
		l.backoff = retry.Next(l.backoff, l.cfg.BackoffInitial, l.cfg.BackoffMax)
		l.unhealthy = true
		logger.Error(err, "Skipping pod synchronization", "retryIn", l.backoff)
		l.metrics.skipped()
		return l.backoff
	}
	l.backoff, l.unhealthy = 0, false

	l.dispatchConfig(ctx)
	l.dispatchEvents(ctx)
	if !now.Before(l.nextSync) {
		l.nextSync = nextTick(l.nextSync, now, l.cfg.SyncPeriod)
		l.periodicSync(ctx)
	}
	if !now.Before(l.nextHK) {
		l.nextHK = nextTick(l.nextHK, now, l.cfg.HousekeepingPeriod)
		l.housekeeping(ctx)
	}
	next := l.nextSync
	if l.nextHK.Before(next) {
		next = l.nextHK
	}
	return max(next.Sub(l.cfg.Clock.Now()), 0)
}

func (l *Loop) runtimeHealth() error {
	if l.cfg.RuntimeHealth == nil {
		return nil
	}
	return l.cfg.RuntimeHealth()
}

// Unhealthy reports whether the last pass found the runtime unhealthy.
func (l *Loop) Unhealthy() bool {
	l.iterMu.Lock()
	defer l.iterMu.Unlock()
	return l.unhealthy
}

func (l *Loop) dispatchConfig(ctx context.Context) {
	l.in.mu.Lock()
	q := l.in.configQ
	l.in.configQ = nil
	l.in.mu.Unlock()
	logger := klog.FromContext(ctx)
	h := l.cfg.Handler
	for _, u := range q {
		l.indexUpdate(u)
		switch u.Op {
		case ADD:
			logger.V(2).Info("SyncLoop ADD", "source", u.Source, "pods", klog.KObjSlice(u.Pods))
			h.HandlePodAdditions(ctx, u.Pods)
		case UPDATE:
			logger.V(2).Info("SyncLoop UPDATE", "source", u.Source, "pods", klog.KObjSlice(u.Pods))
			h.HandlePodUpdates(ctx, u.Pods)
		case REMOVE:
			logger.V(2).Info("SyncLoop REMOVE", "source", u.Source, "pods", klog.KObjSlice(u.Pods))
			h.HandlePodRemoves(ctx, u.Pods)
		case RECONCILE:
			logger.V(4).Info("SyncLoop RECONCILE", "source", u.Source, "pods", klog.KObjSlice(u.Pods))
			h.HandlePodReconcile(ctx, u.Pods)
		case DELETE:
			logger.V(2).Info("SyncLoop DELETE", "source", u.Source, "pods", klog.KObjSlice(u.Pods))
			h.HandlePodUpdates(ctx, u.Pods)
		}
		l.dispatched[u.Source] = true
		if l.allDispatched() {
			l.in.ready.Store(true)
		}
		l.metrics.dispatched(u.Op.String())
	}
}

// indexUpdate keeps the UID index of non-mirror pods, upstream's
// podManager.GetPodByUID view.
func (l *Loop) indexUpdate(u PodUpdate) {
	l.indexMu.Lock()
	defer l.indexMu.Unlock()
	for _, p := range u.Pods {
		if kubetypes.IsMirror(p) {
			continue
		}
		if u.Op == REMOVE {
			delete(l.index, p.UID)
		} else {
			l.index[p.UID] = p
		}
	}
}

func (l *Loop) podByUID(uid types.UID) (*v1.Pod, bool) {
	if l.cfg.PodByUID != nil {
		return l.cfg.PodByUID(uid)
	}
	return l.PodByUID(uid)
}

// Pods returns the pods of the loop's index (see PodByUID), in no
// particular order: the desired pods for a host's housekeeping. Safe for
// concurrent use, also from Handler methods (unlike SourcesReady); the
// pods must not be modified.
func (l *Loop) Pods() []*v1.Pod {
	l.indexMu.RLock()
	defer l.indexMu.RUnlock()
	out := make([]*v1.Pod, 0, len(l.index))
	for _, p := range l.index {
		out = append(out, p)
	}
	return out
}

// PodByUID returns the pod with uid as the loop last dispatched it (ADD,
// UPDATE, DELETE, RECONCILE), and false once it was removed or if it never
// was: the loop's own index of non-mirror pods, upstream's
// podManager.GetPodByUID view. A host whose pod manager needs no more than
// this can use it instead of keeping its own map. Safe for concurrent use,
// also from Handler methods; the pod must not be modified.
func (l *Loop) PodByUID(uid types.UID) (*v1.Pod, bool) {
	l.indexMu.RLock()
	defer l.indexMu.RUnlock()
	p, ok := l.index[uid]
	return p, ok
}

func (l *Loop) dispatchEvents(ctx context.Context) {
	plegQ, died, probeQ, probes := l.in.take()
	if len(plegQ)+len(died)+len(probeQ) == 0 {
		return
	}

	logger := klog.FromContext(ctx)
	pods := l.scratchPods[:0]
	seen := make(map[types.UID]struct{}, len(plegQ)+len(probeQ))
	add := func(uid types.UID, why string) {
		if _, dup := seen[uid]; dup {
			return
		}
		seen[uid] = struct{}{}
		pod, ok := l.podByUID(uid)
		if !ok {
			logger.V(4).Info("SyncLoop: pod does not exist, ignoring irrelevant event", "podUID", uid, "from", why)
			return
		}
		logger.V(2).Info("SyncLoop: event for pod", "pod", klog.KObj(pod), "from", why)
		pods = append(pods, pod)
	}
	for _, uid := range plegQ {
		add(uid, "PLEG")
	}
	for _, k := range probeQ {
		u := probes[k]
		act := probeActionFor(k.probe, u.Result)
		if act.notify && l.cfg.OnProbeResult != nil {
			l.cfg.OnProbeResult(ctx, k.probe, u)
		}
		if act.sync {
			add(u.PodUID, k.probe.String())
		}
	}
	if len(pods) > 0 {
		l.cfg.Handler.HandlePodSyncs(ctx, pods)
		l.metrics.dispatched("sync")
	}
	if l.cfg.OnContainerDied != nil {
		for _, d := range died {
			l.cfg.OnContainerDied(ctx, d.pod, d.id)
		}
	}
	clear(pods)
	l.scratchPods = pods[:0]
}

func (l *Loop) periodicSync(ctx context.Context) {
	if l.cfg.PodsToSync == nil {
		return
	}
	pods := l.scratchPods[:0]
	for _, uid := range l.cfg.PodsToSync() {
		if p, ok := l.podByUID(uid); ok {
			pods = append(pods, p)
		}
	}
	defer func() {
		clear(pods)
		l.scratchPods = pods[:0]
	}()
	if len(pods) == 0 {
		return
	}
	klog.FromContext(ctx).V(4).Info("SyncLoop (SYNC) pods", "total", len(pods))
	l.cfg.Handler.HandlePodSyncs(ctx, pods)
	l.metrics.dispatched("periodic")
}

func (l *Loop) housekeeping(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if !l.allDispatched() {
		logger.V(4).Info("SyncLoop (housekeeping, skipped): sources aren't ready yet")
		return
	}
	start := l.cfg.Clock.Now()
	err := l.cfg.Handler.HandlePodCleanups(ctx)
	if err != nil && !errors.Is(err, context.Canceled) {
		logger.Error(err, "Failed cleaning pods")
	}
	if d := l.cfg.Clock.Since(start); d > l.cfg.HousekeepingWarning {
		logger.Error(nil, "Housekeeping took longer than expected", "expected", l.cfg.HousekeepingWarning, "actual", d.Round(time.Millisecond))
	}
	l.metrics.dispatched("housekeeping")
}
