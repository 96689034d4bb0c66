package lease

import (
	"hash/fnv"
	"time"
)

// Spread returns a stable offset in [0, window) for name, so that names
// added together renew at different times.
func Spread(name string, window time.Duration) time.Duration {
	if window <= 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return time.Duration(h.Sum64() % uint64(window))
}
