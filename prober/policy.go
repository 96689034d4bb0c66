package prober

import (
	"time"
)

// applyThreshold folds a probe result r into the run of equal results
// (last, run) and reports whether r is now the container's result: a
// result is published once it has been seen threshold times in a row,
// successThreshold for Success and failureThreshold for Failure; any other
// result is published at once.
func applyThreshold(last Result, run int, r Result, successThreshold, failureThreshold int) (Result, int, bool) {
	if r == last {
		run++
	} else {
		last, run = r, 1
	}
	switch {
	case r == Failure && run < failureThreshold, r == Success && run < successThreshold:
		return last, run, false
	}
	return last, run, true
}

// holdsAfter reports whether a worker stops probing, until its container
// is replaced, once result r of a probe of type t has been published: after
// a liveness failure (the container will be restarted) and after any
// startup result.
func holdsAfter(t ProbeType, r Result) bool {
	return (t == Liveness && r == Failure) || t == Startup
}

// firstRun is when a new probe first runs: at a random point of its first
// period, so that probes added together spread over the period. rnd is in
// [0, 1).
func firstRun(now time.Time, period time.Duration, rnd float64) time.Time {
	if rnd < 0 || rnd >= 1 {
		rnd = 0
	}
	return now.Add(time.Duration(rnd * float64(period)))
}

// nextRun is when a probe scheduled at scheduled runs again: one period
// later, like a ticker; a probe that overran its slot runs again at once,
// and its later runs keep the period from then on.
func nextRun(scheduled, now time.Time, period time.Duration) time.Time {
	next := scheduled.Add(period)
	if next.Before(now) {
		return now
	}
	return next
}

// inInitialDelay reports whether a container started at startedAt is still
// within the probe's initial delay, comparing whole seconds like upstream.
func inInitialDelay(now, startedAt time.Time, initialDelaySeconds int32) bool {
	return int32(now.Sub(startedAt).Seconds()) < initialDelaySeconds
}
