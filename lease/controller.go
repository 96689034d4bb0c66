package lease

import (
	"container/heap"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Controller renews the Leases of one or many node names. Create it with
// New, then either call Run, or drive Renew yourself.
type Controller struct {
	cfg     Config
	metrics *metrics

	mu      sync.Mutex
	entries map[string]*entry
	queue   schedule      // entries not in flight, by due time
	wake    chan struct{} // nudges Run when the earliest due time moved
	// inFlight counts renewals in progress; sleeping and sleepUntil say
	// that Run sleeps and until when (zero: until nudged); nudged that a
	// nudge is pending. For NextWake.
	inFlight   int
	sleeping   bool
	nudged     bool
	sleepUntil time.Time
	// batchUntil is the end of the batch Run is dispatching: entries due
	// by then are taken with the due one that opened it (BatchWindow).
	batchUntil time.Time
}

// entry is the state of one lease. Fields other than name are guarded by
// Controller.mu, except that the renewing worker owns the entry while
// inFlight is set.
type entry struct {
	name string
	// lease is the last lease written or read, without managed fields,
	// protobuf encoded (a fraction of the decoded object's size and none of
	// its pointers, for a controller of a thousand leases); nil: none, the
	// next renewal reads the server's.
	lease []byte
	// uid is the Node's UID for the owner reference; uidSet marks a UID
	// pushed by SetNodeUID, which lookups never override.
	uid        types.UID
	uidSet     bool
	lastLookup time.Time

	due      time.Time
	failures int  // consecutive failed attempts
	index    int  // position in the schedule heap, -1 when not queued
	inFlight bool // a worker is renewing it
	removed  bool
}

// New validates cfg and returns a controller for its NodeName and Names.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		cfg:     cfg,
		metrics: m,
		entries: make(map[string]*entry),
		wake:    make(chan struct{}, 1),
	}
	for _, name := range cfg.allNames() {
		if _, dup := c.entries[name]; dup {
			return nil, fmt.Errorf("%w: node name %q given twice", ErrInvalidConfig, name)
		}
		c.add(name, Spread(name, cfg.InitialSpread))
	}
	return c, nil
}

// Add starts renewing the lease of nodeName, with a first renewal due at
// once (a new node needs its lease promptly; InitialSpread applies only to
// the names given to New). Adding a name that is already managed does
// nothing. It is safe to call while Run is running.
func (c *Controller) Add(nodeName string) error {
	if err := validateName(nodeName); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[nodeName]; !ok {
		c.add(nodeName, 0)
	}
	return nil
}

func (c *Controller) add(name string, delay time.Duration) {
	e := &entry{name: name, index: -1}
	e.due = c.cfg.Clock.Now().Add(delay)
	c.entries[name] = e
	heap.Push(&c.queue, e)
	c.metrics.setLeases(len(c.entries))
	c.nudge()
}

// Remove stops renewing the lease of nodeName; the Lease object is left for
// its expiry (or the garbage collector, through its owner reference) to
// handle. A renewal in flight completes.
func (c *Controller) Remove(nodeName string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[nodeName]
	if !ok {
		return
	}
	delete(c.entries, nodeName)
	e.removed = true
	if e.index >= 0 {
		heap.Remove(&c.queue, e.index)
	}
	c.metrics.setLeases(len(c.entries))
}

// Names returns the managed node names, in no particular order.
func (c *Controller) Names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.entries))
	for n := range c.entries {
		names = append(names, n)
	}
	return names
}

// SetNodeUID tells the controller the UID of a Node it renews a lease for,
// for example right after the host registered the Node, so that no lookup
// is needed. The next renewal adds the owner reference. An empty uid forgets
// the UID (the Node was deleted).
func (c *Controller) SetNodeUID(nodeName string, uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[nodeName]; ok {
		e.uid, e.uidSet = uid, uid != ""
	}
}

// nudge wakes Run without blocking; the caller holds c.mu.
func (c *Controller) nudge() {
	c.nudged = true // c.mu is held
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// schedule is a min-heap of entries by due time.
type schedule []*entry

func (s schedule) Len() int           { return len(s) }
func (s schedule) Less(i, j int) bool { return s[i].due.Before(s[j].due) }
func (s schedule) Swap(i, j int) {
	s[i], s[j] = s[j], s[i]
	s[i].index, s[j].index = i, j
}
func (s *schedule) Push(x any) {
	e := x.(*entry)
	e.index = len(*s)
	*s = append(*s, e)
}
func (s *schedule) Pop() any {
	old := *s
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*s = old[:len(old)-1]
	e.index = -1
	return e
}

// NextWake tells when Run wakes next to renew, on Config.Clock, while Run is
// idle: asleep, with no renewal in flight and no reschedule pending. ok is
// false otherwise, and when Run is not running; next is the zero time when
// no renewal is scheduled. A test on a fake clock waits until ok, then steps
// the clock to next: the fake clock also holds the request timeouts of
// renewals in flight, so "the clock has waiters" does not mean Run waits.
//
// A next not after the clock's now means the timer has fired and Run is
// about to wake: not parked yet, ask again. Package clockdrive steps a fake
// clock over these methods.
func (c *Controller) NextWake() (next time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.sleeping || c.inFlight > 0 || c.nudged {
		return time.Time{}, false
	}
	return c.sleepUntil, true
}

// RenewInterval returns the period between a lease's renewals (the
// defaulted Config.RenewInterval).
func (c *Controller) RenewInterval() time.Duration { return c.cfg.RenewInterval }

// Lag returns how long the most overdue renewal waiting for a worker has
// been due (zero when none is overdue): Run is behind when the API server
// answers too slowly for Workers renewals in flight. A host sharing the API
// server with other traffic can hold that traffic back while Lag grows, so
// heartbeats go first.
func (c *Controller) Lag() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queue.Len() == 0 {
		return 0
	}
	return max(0, c.cfg.Clock.Since(c.queue[0].due))
}

// NextRenewal returns when the next renewal of nodeName is due, and false
// if the name is not managed. While a renewal is in flight it returns the
// due time of that renewal.
func (c *Controller) NextRenewal(nodeName string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[nodeName]
	if !ok {
		return time.Time{}, false
	}
	return e.due, true
}
