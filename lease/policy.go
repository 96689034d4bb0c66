package lease

import (
	"hash/fnv"
	"time"
)

// Backoff returns the delay before the next attempt after failures
// consecutive failed renewals: initial, doubled per further failure, capped
// at max. It returns 0 for failures ≤ 0.
func Backoff(failures int, initial, max time.Duration) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := initial
	for i := 1; i < failures && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// Jitter stretches d by up to factor·d, where r in [0, 1) picks how much.
func Jitter(d time.Duration, factor, r float64) time.Duration {
	if factor <= 0 {
		return d
	}
	return d + time.Duration(float64(d)*factor*r)
}

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
