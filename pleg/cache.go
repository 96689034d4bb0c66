package pleg

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Cache holds the latest PodStatus of every pod the runtime knows, with the
// time each was fetched, and a global timestamp: every entry is at least as
// fresh as the global timestamp, which the generator advances after each
// full relist. A pod absent from the cache has no sandbox or container in
// the runtime as of the global timestamp; Get returns an empty PodStatus for
// it.
//
// The generator is the cache's only writer. All methods are safe for
// concurrent use; GetNewerThan and WaitNewerThan block, the others do not.
type Cache struct {
	mu      sync.Mutex
	pods    map[types.UID]*cacheEntry
	global  time.Time // zero until the first UpdateTime
	waiters map[types.UID][]*cacheWaiter
	// onWait, if set, is called (without the lock) when a caller starts
	// waiting for uid. The generator uses it in evented mode to relist the
	// pod instead of letting the caller wait for the safety-net relist.
	onWait func(uid types.UID)
	// owned is set once a Generator writes this cache (Config.Cache).
	owned bool
}

type cacheEntry struct {
	status   *PodStatus
	err      error
	modified time.Time // when status was fetched
	observed time.Time // when the runtime last confirmed status unchanged
}

type cacheWaiter struct {
	minTime time.Time
	ready   chan struct{}
}

// NewCache returns an empty cache whose global timestamp is unset, so that
// GetNewerThan blocks until the first relist completes.
func NewCache() *Cache {
	return &Cache{pods: map[types.UID]*cacheEntry{}, waiters: map[types.UID][]*cacheWaiter{}}
}

// Get returns the cached status of uid and the error met fetching it (the
// status is then nil: the Generator never caches the part of a status a
// failed fetch got). For a pod the cache does not hold it returns an empty
// status with ID set.
func (c *Cache) Get(uid types.UID) (*PodStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(uid)
}

func (c *Cache) getLocked(uid types.UID) (*PodStatus, error) {
	if e, ok := c.pods[uid]; ok {
		return e.status, e.err
	}
	return &PodStatus{ID: uid}, nil
}

// Set stores the status of uid fetched at timestamp, with the error met
// fetching it (status may then be partial or nil), and releases the waiters
// it satisfies. It refuses data older than what the cache holds and reports
// whether it stored it.
func (c *Cache) Set(uid types.UID, status *PodStatus, err error, timestamp time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[uid]; ok && e.modified.After(timestamp) {
		return false
	}
	c.pods[uid] = &cacheEntry{status: status, err: err, modified: timestamp, observed: timestamp}
	c.notifyLocked(uid, timestamp)
	return true
}

// SetObservedTime records that the runtime confirmed at timestamp that the
// cached status of uid is still current, and releases the waiters this
// satisfies.
func (c *Cache) SetObservedTime(uid types.UID, timestamp time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[uid]; ok && timestamp.After(e.observed) {
		e.observed = timestamp
	}
	c.notifyLocked(uid, timestamp)
}

// Delete forgets uid. Waiters are released by the next global timestamp
// update or SetObservedTime.
func (c *Cache) Delete(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, uid)
}

// UpdateTime advances the global timestamp: the cache now reflects the
// runtime as of timestamp. Waiters it satisfies are released. An older
// timestamp is ignored.
func (c *Cache) UpdateTime(timestamp time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !timestamp.After(c.global) {
		return
	}
	c.global = timestamp
	for uid := range c.waiters {
		c.notifyLocked(uid, timestamp)
	}
}

// Timestamp returns the global timestamp (zero before the first relist).
func (c *Cache) Timestamp() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.global
}

// GetNewerThan blocks until the cache holds data about uid fetched or
// confirmed strictly after minTime (its own, or the global timestamp), then
// returns it like Get. It returns ctx's error if ctx ends first. This is the
// freshness barrier pod workers use before a sync.
func (c *Cache) GetNewerThan(ctx context.Context, uid types.UID, minTime time.Time) (*PodStatus, error) {
	if err := c.WaitNewerThan(ctx, uid, minTime); err != nil {
		return nil, err
	}
	return c.Get(uid)
}

// WaitNewerThan is GetNewerThan without the status; it has the shape of the
// podworkers StatusBarrier. It returns nil when fresh data exists, or ctx's
// error.
func (c *Cache) WaitNewerThan(ctx context.Context, uid types.UID, minTime time.Time) error {
	c.mu.Lock()
	if c.freshLocked(uid, minTime) {
		c.mu.Unlock()
		return nil
	}
	w := &cacheWaiter{minTime: minTime, ready: make(chan struct{})}
	c.waiters[uid] = append(c.waiters[uid], w)
	onWait := c.onWait
	c.mu.Unlock()
	if onWait != nil {
		onWait(uid)
	}
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		c.removeWaiter(uid, w)
		return ctx.Err()
	}
}

func (c *Cache) freshLocked(uid types.UID, minTime time.Time) bool {
	if c.global.After(minTime) {
		return true
	}
	e, ok := c.pods[uid]
	return ok && (e.modified.After(minTime) || e.observed.After(minTime))
}

// notifyLocked releases the waiters of uid satisfied by data at timestamp.
func (c *Cache) notifyLocked(uid types.UID, timestamp time.Time) {
	list := c.waiters[uid]
	if len(list) == 0 {
		return
	}
	kept := list[:0]
	for _, w := range list {
		if timestamp.After(w.minTime) {
			close(w.ready)
			continue
		}
		kept = append(kept, w)
	}
	clear(list[len(kept):])
	if len(kept) == 0 {
		delete(c.waiters, uid)
		return
	}
	c.waiters[uid] = kept
}

func (c *Cache) removeWaiter(uid types.UID, w *cacheWaiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	list := c.waiters[uid]
	for i, x := range list {
		if x == w {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(c.waiters, uid)
		return
	}
	c.waiters[uid] = list
}

// waiting reports how many callers are blocked, for tests and metrics.
func (c *Cache) waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, l := range c.waiters {
		n += len(l)
	}
	return n
}

// UIDs returns the pods the cache holds a status for: every pod with a
// sandbox or container in the runtime as of its latest relist, running or
// not, in no particular order. Housekeeping uses it to find runtime pods
// that no longer have a config; kill only those with a ready sandbox or a
// running container (Get tells), as upstream, or a stopped orphan is
// killed again at every pass.
func (c *Cache) UIDs() []types.UID {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]types.UID, 0, len(c.pods))
	for uid := range c.pods {
		out = append(out, uid)
	}
	return out
}

// own marks c as written by one generator; false if another owns it.
func (c *Cache) own() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owned {
		return false
	}
	c.owned = true
	return true
}
