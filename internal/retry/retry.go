// Package retry is the library's one exponential back-off and one jitter,
// as pure functions of their inputs: a block keeps its own failure count
// or current delay and its own random source, so tests on a fake clock
// see exact delays. Per-key back-offs (image pulls, crash loops) use
// client-go's flowcontrol.Backoff instead.
package retry

import "time"

// Backoff is the delay after failures consecutive failures: initial,
// doubled per further failure, capped at max; 0 for failures ≤ 0.
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

// Next is the delay after cur: initial when cur is below it (the first
// failure), else cur doubled, capped at max.
func Next(cur, initial, max time.Duration) time.Duration {
	if cur < initial {
		return initial
	}
	if cur >= max/2 {
		return max
	}
	return 2 * cur
}

// Jitter stretches d by up to factor·d, where r in [0, 1) picks how much;
// a factor of zero or less leaves d alone.
func Jitter(d time.Duration, factor, r float64) time.Duration {
	if factor <= 0 {
		return d
	}
	return d + time.Duration(float64(d)*factor*r)
}
