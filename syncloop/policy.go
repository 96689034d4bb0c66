package syncloop

import (
	"time"

	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/prober"
)

// isSyncWorthy reports whether a PLEG event calls for a pod sync: every
// event but ContainerRemoved, like upstream.
func isSyncWorthy(t pleg.EventType) bool {
	return t != pleg.ContainerRemoved
}

// probeAction is what the loop does with a probe result.
type probeAction struct {
	// notify: pass the result to OnProbeResult.
	notify bool
	// sync: sync the pod.
	sync bool
}

// probeActionFor is upstream's routing: a liveness failure syncs the pod
// (a success needs nothing); readiness and startup results update the
// host's status and sync the pod.
func probeActionFor(t prober.ProbeType, r prober.Result) probeAction {
	switch t {
	case prober.Liveness:
		return probeAction{sync: r == prober.Failure}
	case prober.Readiness, prober.Startup:
		return probeAction{notify: true, sync: true}
	}
	return probeAction{}
}

// nextTick returns when a periodic action that was due at due runs next:
// one period later, or one period from now if the loop fell behind by more
// than a period (missed ticks are not replayed, like a time.Ticker).
func nextTick(due, now time.Time, period time.Duration) time.Time {
	next := due.Add(period)
	if !next.After(now) {
		next = now.Add(period)
	}
	return next
}
