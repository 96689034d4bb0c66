package eviction

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
)

// thresholdsMet returns the thresholds whose signal is observed below the
// threshold value, ignoring grace periods. With enforceMinReclaim the
// comparison is against value + minimum reclaim, which keeps a threshold
// met until enough has been reclaimed.
func thresholdsMet(ts []Threshold, obs Observations, enforceMinReclaim bool) []Threshold {
	var out []Threshold
	for _, t := range ts {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		level := t.Value.amount(o.Capacity)
		if enforceMinReclaim && t.MinReclaim != nil {
			level += t.MinReclaim.amount(o.Capacity)
		}
		if o.Available < level {
			out = append(out, t)
		}
	}
	return out
}

// mergeThresholds appends to a the thresholds of b it does not contain.
func mergeThresholds(a, b []Threshold) []Threshold {
	for _, t := range b {
		if !slices.ContainsFunc(a, t.equal) {
			a = append(a, t)
		}
	}
	return a
}

// firstObservedAt keeps, for each met threshold, when it was first met in
// the current streak; thresholds no longer met are dropped.
func firstObservedAt(met []Threshold, last map[thresholdKey]time.Time, now time.Time) map[thresholdKey]time.Time {
	out := make(map[thresholdKey]time.Time, len(met))
	for _, t := range met {
		at, ok := last[t.key()]
		if !ok {
			at = now
		}
		out[t.key()] = at
	}
	return out
}

// thresholdsMetGracePeriod returns the met thresholds that have been met
// for at least their grace period, in the order of met.
func thresholdsMetGracePeriod(met []Threshold, first map[thresholdKey]time.Time, now time.Time) []Threshold {
	var out []Threshold
	for _, t := range met {
		at, ok := first[t.key()]
		if ok && now.Sub(at) >= t.GracePeriod {
			out = append(out, t)
		}
	}
	return out
}

// nodeConditionsOf returns the distinct node conditions of the thresholds.
func nodeConditionsOf(ts []Threshold) []v1.NodeConditionType {
	var out []v1.NodeConditionType
	for _, t := range ts {
		if c := t.Signal.NodeCondition(); c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// conditionsLastObservedAt records now for every current condition and keeps
// the previous time for the others.
func conditionsLastObservedAt(current []v1.NodeConditionType, last map[v1.NodeConditionType]time.Time, now time.Time) map[v1.NodeConditionType]time.Time {
	out := make(map[v1.NodeConditionType]time.Time, len(last)+len(current))
	for c, at := range last {
		out[c] = at
	}
	for _, c := range current {
		out[c] = now
	}
	return out
}

// conditionsObservedSince returns the conditions last observed less than
// period ago (the pressure transition period), in a stable order.
func conditionsObservedSince(last map[v1.NodeConditionType]time.Time, period time.Duration, now time.Time) []v1.NodeConditionType {
	var out []v1.NodeConditionType
	for _, c := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		if at, ok := last[c]; ok && now.Sub(at) < period {
			out = append(out, c)
		}
	}
	return out
}

// thresholdsUpdatedStats drops thresholds whose observation has not been
// refreshed since the last pass, so one stale sample never evicts twice.
func thresholdsUpdatedStats(ts []Threshold, obs, last Observations) []Threshold {
	var out []Threshold
	for _, t := range ts {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		l, seen := last[t.Signal]
		if !seen || o.Time.IsZero() || o.Time.After(l.Time) {
			out = append(out, t)
		}
	}
	return out
}

// sortByEvictionPriority orders thresholds memory first, keeping the
// relative order of the rest (upstream's byEvictionPriority, made stable).
func sortByEvictionPriority(ts []Threshold) {
	slices.SortStableFunc(ts, func(a, b Threshold) int {
		am, bm := a.Signal.isMemory(), b.Signal.isMemory()
		switch {
		case am && !bm:
			return -1
		case bm && !am:
			return 1
		}
		return 0
	})
}

// starvedResource returns the threshold and resource to reclaim: the first
// threshold after sortByEvictionPriority.
func starvedResource(ts []Threshold) (Threshold, v1.ResourceName, bool) {
	for _, t := range ts {
		if r := t.Signal.Resource(); r != "" {
			return t, r, true
		}
	}
	return Threshold{}, "", false
}

// deriveContainerFsThresholds replaces any containerfs thresholds with
// copies of the nodefs ones (single filesystem, or containers split from
// a dedicated imagefs) or of the imagefs ones (dedicated imagefs holding
// containers too), as upstream does.
func deriveContainerFsThresholds(ts []Threshold, dedicatedImageFs, splitContainerFs bool) []Threshold {
	from := map[Signal]Signal{SignalNodeFsAvailable: SignalContainerFsAvailable, SignalNodeFsInodesFree: SignalContainerFsInodesFree}
	if dedicatedImageFs && !splitContainerFs {
		from = map[Signal]Signal{SignalImageFsAvailable: SignalContainerFsAvailable, SignalImageFsInodesFree: SignalContainerFsInodesFree}
	}
	out := make([]Threshold, 0, len(ts)+4)
	for _, t := range ts {
		if t.Signal != SignalContainerFsAvailable && t.Signal != SignalContainerFsInodesFree {
			out = append(out, t)
		}
	}
	n := len(out)
	for _, t := range out[:n] {
		if to, ok := from[t.Signal]; ok {
			t.Signal = to
			out = append(out, t)
		}
	}
	return out
}
