package podworkers

import (
	v1 "k8s.io/api/core/v1"
)

// gracePeriod is the grace period in force for a terminating pod: set is
// false until termination is requested.
type gracePeriod struct {
	seconds int64
	set     bool
}

// effectiveGracePeriod folds a pod's deletion grace period and a kill's
// override into the grace period in force, which only ever shortens. With
// nothing in force and no override it falls back to the pod's
// terminationGracePeriodSeconds, or the API default of 30s when unset. The
// result is at least 1s unless a kill forced 0 (now or earlier). shortened
// reports whether a grace period was in force and got shorter.
func effectiveGracePeriod(prev gracePeriod, pod *v1.Pod, kill *KillOptions) (next gracePeriod, shortened bool) {
	next = prev
	lower := func(v int64) {
		if !next.set || v < next.seconds {
			next = gracePeriod{seconds: v, set: true}
		}
	}
	if pod != nil && pod.DeletionGracePeriodSeconds != nil {
		lower(*pod.DeletionGracePeriodSeconds)
	}
	forced := false
	if kill != nil && kill.GracePeriodOverride != nil {
		lower(*kill.GracePeriodOverride)
		forced = kill.Force && *kill.GracePeriodOverride <= 0
	}
	if !next.set {
		next = gracePeriod{seconds: v1.DefaultTerminationGracePeriodSeconds, set: true}
		if pod != nil && pod.Spec.TerminationGracePeriodSeconds != nil {
			next.seconds = *pod.Spec.TerminationGracePeriodSeconds
		}
	}
	if next.seconds < 1 {
		if forced || (prev.set && prev.seconds <= 0) {
			next.seconds = 0
		} else {
			next.seconds = 1
		}
	}
	return next, prev.set && next.seconds != prev.seconds
}
