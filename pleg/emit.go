package pleg

import (
	"context"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
)

// emitter delivers events to the Events channel without ever blocking the
// generator and without losing a pod: when the channel is full, the event is
// replaced by a debt of one PodSync for its pod, and later events of that
// pod fold into the same debt until it is paid. Debts are paid in the order
// they arose, as soon as the channel has room.
//
// With a sink, events go to the sink instead, synchronously and in order.
type emitter struct {
	out            chan PodLifecycleEvent
	sink           func(PodLifecycleEvent)
	deliverChanged bool
	m              *metrics

	mu    sync.Mutex
	queue []types.UID        // pods owed a PodSync, oldest first, not yet being paid
	owed  map[types.UID]bool // pods owed a PodSync (queued or being paid)
	wake  chan struct{}      // signals a new debt, capacity 1
	count atomic.Uint64      // events folded into a debt
}

func newEmitter(capacity int, deliverChanged bool, m *metrics) *emitter {
	return &emitter{
		out:            make(chan PodLifecycleEvent, capacity),
		deliverChanged: deliverChanged,
		m:              m,
		owed:           map[types.UID]bool{},
		wake:           make(chan struct{}, 1),
	}
}

// emit delivers ev or folds it into its pod's debt. It never blocks.
func (e *emitter) emit(ev PodLifecycleEvent) {
	if ev.Type == ContainerChanged && !e.deliverChanged {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sink != nil {
		e.sink(ev)
		e.m.delivered(ev.Type)
		return
	}
	if !e.owed[ev.ID] {
		select {
		case e.out <- ev:
			e.m.delivered(ev.Type)
			return
		default:
		}
		e.owed[ev.ID] = true
		e.queue = append(e.queue, ev.ID)
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
	e.count.Add(1)
	e.m.discard()
}

// flush pays the debts the channel has room for, without blocking.
func (e *emitter) flush() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for len(e.queue) > 0 {
		uid := e.queue[0]
		select {
		case e.out <- PodLifecycleEvent{ID: uid, Type: PodSync}:
		default:
			return
		}
		e.queue = e.queue[1:]
		delete(e.owed, uid)
		e.m.delivered(PodSync)
	}
}

// deliver pays debts as the consumer makes room, until ctx ends.
func (e *emitter) deliver(ctx context.Context) {
	for {
		e.mu.Lock()
		if len(e.queue) == 0 {
			e.mu.Unlock()
			select {
			case <-e.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		uid := e.queue[0]
		e.queue = e.queue[1:]
		e.mu.Unlock()

		select {
		case e.out <- PodLifecycleEvent{ID: uid, Type: PodSync}:
			e.mu.Lock()
			delete(e.owed, uid)
			e.mu.Unlock()
			e.m.delivered(PodSync)
		case <-ctx.Done():
			e.mu.Lock()
			e.queue = append([]types.UID{uid}, e.queue...)
			e.mu.Unlock()
			return
		}
	}
}

// pending reports how many pods are owed a PodSync.
func (e *emitter) pending() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.owed)
}
