package syncloop

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/internal/parking"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/prober"
)

// Inbox is where a Loop's producers leave their input: PLEG events, probe
// results and the sources' snapshots, and where the loop publishes whether
// every source was dispatched. It exists apart from the Loop so that the
// producers can be built first: the PLEG and the prober are built before
// the pod workers and the handler the Loop needs, and are handed the
// Inbox's methods as their sinks (upstream's PLEG channel, which the loop
// reads). Give it to the Loop as Config.Inbox; one Inbox serves one Loop.
// Input queued before the Loop is built waits for it. Safe for concurrent
// use; no method blocks.
type Inbox struct {
	metrics atomic.Pointer[metrics] // the Loop's, once built
	taken   atomic.Bool
	notify  chan struct{}
	parked  parking.State // the Loop's Run state, for NextWake
	// ready is set once every source has been dispatched (read without
	// the loop's lock: an eviction reclaim must not wait for a
	// housekeeping pass).
	ready atomic.Bool

	mu      sync.Mutex // guards the mailboxes below
	configQ []PodUpdate
	plegQ   []types.UID
	plegSet map[types.UID]struct{}
	died    []deadContainer
	probeQ  []probeKey
	probes  map[probeKey]prober.Update
}

// NewInbox returns an empty Inbox.
func NewInbox() *Inbox {
	return &Inbox{notify: make(chan struct{}, 1), plegSet: map[types.UID]struct{}{}, probes: map[probeKey]prober.Update{}}
}

func (in *Inbox) wake() {
	in.parked.Wake()
	select {
	case in.notify <- struct{}{}:
	default:
	}
}

// HandlePLEGEvent queues a pod lifecycle event: a pleg.Config.Sink. It
// never blocks: events for the same pod coalesce into one sync, and every
// ContainerDied event is kept for OnContainerDied.
func (in *Inbox) HandlePLEGEvent(e pleg.PodLifecycleEvent) {
	in.mu.Lock()
	if isSyncWorthy(e.Type) {
		if _, ok := in.plegSet[e.ID]; !ok {
			in.plegSet[e.ID] = struct{}{}
			in.plegQ = append(in.plegQ, e.ID)
		}
	}
	if e.Type == pleg.ContainerDied && !e.ContainerID.IsEmpty() {
		in.died = append(in.died, deadContainer{pod: e.ID, id: e.ContainerID})
	}
	in.mu.Unlock()
	in.metrics.Load().queued("pleg", 1)
	in.wake()
}

// HandleProbeUpdate queues a probe result. It never blocks: a newer result
// of the same probe of the same container replaces an undispatched older
// one (the pod sync reads the current results, so nothing is lost); probe
// workers may call it directly.
func (in *Inbox) HandleProbeUpdate(probe prober.ProbeType, u prober.Update) {
	k := probeKey{probe: probe, containerID: u.ContainerID}
	in.mu.Lock()
	if _, ok := in.probes[k]; !ok {
		in.probeQ = append(in.probeQ, k)
	}
	in.probes[k] = u
	in.mu.Unlock()
	in.metrics.Load().queued("probe", 1)
	in.wake()
}

// SourcesReady reports whether every source of the Loop has sent a
// snapshot that was dispatched to its Handler (upstream's
// SourcesReady.AllReady); false before the Loop runs.
//
// It need not be called from a Handler method: HandlePodCleanups needs no
// check, the loop only calls it once every source is ready.
func (in *Inbox) SourcesReady() bool { return in.ready.Load() }

// take empties the event mailboxes.
func (in *Inbox) take() ([]types.UID, []deadContainer, []probeKey, map[probeKey]prober.Update) {
	in.mu.Lock()
	defer in.mu.Unlock()
	plegQ, died, probeQ, probes := in.plegQ, in.died, in.probeQ, in.probes
	if len(plegQ)+len(died)+len(probeQ) == 0 {
		return nil, nil, nil, nil
	}
	in.plegQ, in.died, in.probeQ = nil, nil, nil
	in.plegSet = make(map[types.UID]struct{}, len(plegQ))
	in.probes = make(map[probeKey]prober.Update, len(probeQ))
	return plegQ, died, probeQ, probes
}
