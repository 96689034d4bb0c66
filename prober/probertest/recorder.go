package probertest

import (
	"sync"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/prober"
)

// TypedUpdate is a result update with the type of the probe that produced
// it.
type TypedUpdate struct {
	// Type is the kind of probe.
	Type prober.ProbeType
	prober.Update
}

// Recorder keeps every update sent to its Sink. The zero value is ready to
// use.
type Recorder struct {
	mu      sync.Mutex
	updates []TypedUpdate
}

// Sink records an update. Its method value rec.Sink is a prober.Config.Sink:
// it never blocks and is safe for concurrent use.
func (r *Recorder) Sink(t prober.ProbeType, u prober.Update) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, TypedUpdate{Type: t, Update: u})
}

// Updates returns the updates recorded so far, in the order Sink received
// them.
func (r *Recorder) Updates() []TypedUpdate {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]TypedUpdate(nil), r.updates...)
}

// Len returns how many updates were recorded.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.updates)
}

// Last returns the latest t result recorded for a container, and false if
// there is none. containerID is written as in pod statuses
// ("containerd://c1") or bare ("c1", which matches any runtime type); an
// invalid ID matches nothing.
func (r *Recorder) Last(t prober.ProbeType, containerID string) (prober.Result, bool) {
	id, err := containerid.Parse(containerID)
	if err != nil {
		return prober.Unknown, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.updates) - 1; i >= 0; i-- {
		if u := r.updates[i]; u.Type == t && u.ContainerID.Same(id) {
			return u.Result, true
		}
	}
	return prober.Unknown, false
}
