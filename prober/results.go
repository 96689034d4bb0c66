package prober

import (
	"context"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/containerid"
)

// resultCache holds the latest result of one probe type per container and
// the updates not yet delivered to the sync loop. Set never blocks: while
// the consumer lags, updates for the same container coalesce and the latest
// wins. Run's pump goroutine delivers them in first-changed order.
type resultCache struct {
	mu      sync.Mutex
	results map[string]Result
	pending map[string]Update // latest undelivered update per container
	queue   []string          // container IDs in the order they became pending
	notify  chan struct{}     // 1-buffered: something became pending
	out     chan Update       // unbuffered; the sync loop receives here
	sink    func(Update)      // if set, receives updates instead of out
}

func newResultCache() *resultCache {
	return &resultCache{
		results: make(map[string]Result),
		pending: make(map[string]Update),
		notify:  make(chan struct{}, 1),
		out:     make(chan Update),
	}
}

// get returns the cached result of a container.
func (c *resultCache) get(id string) (Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.results[cacheKey(id)]
	return r, ok
}

// cacheKey is the runtime's ID of a container ("<type>://<id>" or a bare
// ID): results are found whether or not a caller knows the runtime type,
// as containerid.ID.Same treats an unknown type as matching.
func cacheKey(id string) string {
	if i := strings.Index(id, "://"); i >= 0 {
		return id[i+3:]
	}
	return id
}

// set caches r and, if it differs from the cached value, queues an update
// (or hands it to the sink).
func (c *resultCache) set(id string, r Result, pod types.UID) {
	k := cacheKey(id)
	c.mu.Lock()
	if prev, ok := c.results[k]; ok && prev == r {
		c.mu.Unlock()
		return
	}
	c.results[k] = r
	cid, _ := containerid.Parse(id) // never empty: workers set results only for containers with an ID
	u := Update{ContainerID: cid, Result: r, PodUID: pod}
	if c.sink != nil {
		c.mu.Unlock()
		c.sink(u)
		return
	}
	if _, queued := c.pending[k]; !queued {
		c.queue = append(c.queue, k)
	}
	c.pending[k] = u
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// remove forgets a container: its cached result and any undelivered update.
func (c *resultCache) remove(id string) {
	id = cacheKey(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.results, id)
	delete(c.pending, id)
	if len(c.queue) > 2*len(c.pending)+64 { // drop IDs removed while queued
		q := c.queue[:0]
		for _, id := range c.queue {
			if _, ok := c.pending[id]; ok {
				q = append(q, id)
			}
		}
		clear(c.queue[len(q):])
		c.queue = q
	}
}

// pop takes the oldest pending update.
func (c *resultCache) pop() (Update, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.queue) > 0 {
		id := c.queue[0]
		c.queue[0] = ""
		c.queue = c.queue[1:]
		if u, ok := c.pending[id]; ok {
			delete(c.pending, id)
			return u, true
		}
	}
	c.queue = nil
	return Update{}, false
}

// unpop puts back an update that could not be delivered, unless a newer
// one for the same container is already pending.
func (c *resultCache) unpop(u Update) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := u.ContainerID.ID
	if _, ok := c.pending[id]; ok {
		return
	}
	if _, live := c.results[id]; !live {
		return
	}
	c.pending[id] = u
	c.queue = append([]string{id}, c.queue...)
}

// pendingLen is the number of undelivered updates.
func (c *resultCache) pendingLen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// pump delivers pending updates to out until ctx is done.
func (c *resultCache) pump(ctx context.Context) {
	for {
		u, ok := c.pop()
		if !ok {
			select {
			case <-c.notify:
				continue
			case <-ctx.Done():
				return
			}
		}
		select {
		case c.out <- u:
		case <-ctx.Done():
			c.unpop(u)
			return
		}
	}
}
