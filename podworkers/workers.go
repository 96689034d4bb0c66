package podworkers

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Workers drives every known pod through its lifecycle. Create it with New;
// all methods are safe for concurrent use.
type Workers struct {
	cfg     Config
	metrics *metrics

	mu   sync.Mutex
	pods map[types.UID]*podState
	// epoch is the Clock's time at New, the origin of the pods' stamps.
	epoch time.Time
	// staticNames holds the full name (name_namespace) of each static pod:
	// static pods run one at a time per full name.
	staticNames map[types.UID]string
	// startedStatic maps a static pod full name to the UID allowed to run;
	// waitingStatic lists, in arrival order, the UIDs waiting for it.
	startedStatic map[string]types.UID
	waitingStatic map[string][]types.UID
	// runnable holds pods with work and no goroutine, in FIFO order.
	runnable []*podState
	// queue is the work queue: the pods' resync and retry times.
	queue dueQueue
	// podsSynced is set by the first SyncKnownPods.
	podsSynced bool

	// runCtx is the context of the active Run, nil otherwise; running stays
	// true until that Run's goroutines have exited.
	runCtx     context.Context
	running    bool
	goroutines int
	// inBarrier counts syncs waiting in the status barrier, pending the
	// pods ProcessPending callers work on (Active).
	inBarrier, pending int
	wg                 sync.WaitGroup
	// onIdle, set by tests before Run, is called with mu held whenever the
	// last worker goroutine exits.
	onIdle func()
}

// New validates cfg, fills in defaults and returns idle Workers. Updates
// may be delivered at once; they are worked on while Run is active or when
// the host calls ProcessPending.
func New(cfg Config) (*Workers, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Workers{
		cfg:           cfg,
		metrics:       m,
		pods:          map[types.UID]*podState{},
		epoch:         cfg.Clock.Now(),
		staticNames:   map[types.UID]string{},
		startedStatic: map[string]types.UID{},
		waitingStatic: map[string][]types.UID{},
	}, nil
}

// Run works on pods until ctx is done: a pod with work gets a goroutine
// (within MaxConcurrentSyncs), which exits when the pod has no more work.
// When ctx is done Run cancels the syncs in flight, waits for every worker
// goroutine to return, and returns nil. Work interrupted or not yet started
// is kept and resumes on the next Run or ProcessPending. Only one Run may be
// active; another returns ErrAlreadyRunning.
func (w *Workers) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.running {
		w.mu.Unlock()
		return ErrAlreadyRunning
	}
	w.running = true
	w.runCtx = ctx
	for len(w.runnable) > 0 && w.canSpawn() {
		w.spawn(w.popRunnable())
	}
	w.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Pod workers started")

	<-ctx.Done()

	w.mu.Lock()
	w.runCtx = nil
	w.mu.Unlock()
	w.wg.Wait()
	w.mu.Lock()
	w.running = false
	w.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Pod workers stopped")
	return nil
}

// Active reports how many pods are being worked on or wait for a worker,
// not counting those waiting in the status barrier: a worker goroutine
// between or inside Syncer calls counts, a pod queued for a goroutine (or
// for ProcessPending) counts, a sync blocked in StatusBarrier does not. A
// test driving Run on a fake clock steps the clock only once Active is 0:
// syncs in the barrier wait for the PLEG's next relist, that is for the
// clock. (A sync the barrier just released counts as waiting until its
// goroutine runs again.)
func (w *Workers) Active() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.goroutines + w.pending + len(w.runnable) - w.inBarrier
}

// ProcessPending works on pods with pending work in the calling goroutine,
// one update at a time, until none is left (including the follow-up work of
// a phase change, such as terminated after terminating) or ctx is done, and
// returns how many syncs it ran. It is the synchronous core of Run, for
// hosts that want no goroutines and for deterministic tests; it is safe to
// call while Run is active (a pod is still worked on by one caller at a
// time). Pods waiting for a static pod slot are left waiting.
func (w *Workers) ProcessPending(ctx context.Context) int {
	n := 0
	for ctx.Err() == nil {
		w.mu.Lock()
		if len(w.runnable) == 0 {
			w.mu.Unlock()
			break
		}
		st := w.popRunnable()
		w.pending++
		w.mu.Unlock()
		n += w.workOn(ctx, st)
		w.mu.Lock()
		w.pending--
		w.mu.Unlock()
	}
	return n
}

// schedule makes sure a pod with pending work has an owner: a new goroutine
// while Run is active and under its bound, the runnable queue otherwise.
// Called with mu held.
func (w *Workers) schedule(st *podState) {
	if st.working {
		return
	}
	st.working = true
	if w.runCtx != nil && w.canSpawn() {
		w.spawn(st)
		return
	}
	st.queued = true
	w.runnable = append(w.runnable, st)
}

func (w *Workers) canSpawn() bool {
	return w.cfg.MaxConcurrentSyncs == 0 || w.goroutines < w.cfg.MaxConcurrentSyncs
}

// spawn starts a worker goroutine owning st. Called with mu held while Run
// is active.
func (w *Workers) spawn(st *podState) {
	w.goroutines++
	w.wg.Add(1)
	ctx := w.runCtx
	go w.worker(ctx, st)
}

// popRunnable removes the oldest runnable pod. Called with mu held and a
// non-empty queue.
func (w *Workers) popRunnable() *podState {
	st := w.runnable[0]
	w.runnable[0] = nil
	w.runnable = w.runnable[1:]
	if len(w.runnable) == 0 {
		w.runnable = nil
	}
	st.queued = false
	return st
}

// worker owns st until it has no work, then takes the next runnable pod,
// and exits when there is none or Run is stopping.
func (w *Workers) worker(ctx context.Context, st *podState) {
	defer w.wg.Done()
	for st != nil {
		w.workOn(ctx, st)
		w.mu.Lock()
		if ctx.Err() != nil || len(w.runnable) == 0 {
			w.goroutines--
			st = nil
			if w.goroutines == 0 && w.onIdle != nil {
				w.onIdle()
			}
		} else {
			st = w.popRunnable()
		}
		w.mu.Unlock()
	}
}

// workOn runs st's pending work until it has none, returning the number of
// syncs run. The caller owns st (st.working is set).
func (w *Workers) workOn(ctx context.Context, st *podState) int {
	n := 0
	for {
		u := w.begin(ctx, st)
		if u == nil {
			return n
		}
		n++
		terminal, err := w.execute(u)
		if !w.finish(u, terminal, err) {
			return n
		}
	}
}
