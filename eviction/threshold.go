package eviction

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// ThresholdValue is either an absolute quantity or a fraction of capacity.
// Exactly one of the fields is set.
type ThresholdValue struct {
	// Quantity is an absolute amount (bytes, inodes or PIDs).
	Quantity *resource.Quantity
	// Percentage is a fraction of the capacity in (0, 1).
	Percentage float32
}

// amount resolves v against a capacity.
func (v ThresholdValue) amount(capacity int64) int64 {
	if v.Quantity != nil {
		return v.Quantity.Value()
	}
	return int64(float64(capacity) * float64(v.Percentage))
}

// String renders v as it would be written in a flag.
func (v ThresholdValue) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	return fmt.Sprintf("%.6g%%", float64(v.Percentage)*100)
}

func (v ThresholdValue) equal(o ThresholdValue) bool {
	if (v.Quantity == nil) != (o.Quantity == nil) {
		return false
	}
	if v.Quantity != nil {
		return v.Quantity.Cmp(*o.Quantity) == 0
	}
	return v.Percentage == o.Percentage
}

// Threshold is one eviction threshold: it is met when the observed
// available amount of Signal is below Value. A zero GracePeriod makes it a
// hard threshold (acted upon at once, pods killed with a 1s grace period);
// otherwise it is soft and must be met continuously for GracePeriod.
type Threshold struct {
	// Signal is the observed quantity.
	Signal Signal
	// Value is the level below which the threshold is met.
	Value ThresholdValue
	// GracePeriod is how long a soft threshold must be met before it
	// drives eviction; zero for a hard threshold.
	GracePeriod time.Duration
	// MinReclaim, if set, keeps the threshold met until the available
	// amount exceeds Value plus MinReclaim.
	MinReclaim *ThresholdValue
}

// IsHard reports whether t acts without a grace period.
func (t Threshold) IsHard() bool { return t.GracePeriod == 0 }

// String renders t in the kubelet's flag syntax, e.g.
// "memory.available<100Mi" or "memory.available<200Mi (grace 1m30s)".
func (t Threshold) String() string {
	s := string(t.Signal) + "<" + t.Value.String()
	if !t.IsHard() {
		s += fmt.Sprintf(" (grace %v)", t.GracePeriod)
	}
	if t.MinReclaim != nil {
		s += fmt.Sprintf(" (min-reclaim %v)", t.MinReclaim)
	}
	return s
}

// key identifies a threshold within a validated set: at most one hard and
// one soft threshold exist per signal.
type thresholdKey struct {
	signal Signal
	soft   bool
}

func (t Threshold) key() thresholdKey { return thresholdKey{t.Signal, !t.IsHard()} }

func (t Threshold) equal(o Threshold) bool {
	return t.Signal == o.Signal && t.GracePeriod == o.GracePeriod && t.Value.equal(o.Value)
}

// validateThresholds checks a threshold set built by hand (ParseThresholds
// output is always valid).
func validateThresholds(ts []Threshold) error {
	seen := make(map[thresholdKey]bool, len(ts))
	for _, t := range ts {
		if !t.Signal.Valid() {
			return fmt.Errorf("%w: unknown signal %q", ErrInvalidThreshold, t.Signal)
		}
		if t.GracePeriod < 0 {
			return fmt.Errorf("%w: %s: negative grace period %v", ErrInvalidThreshold, t.Signal, t.GracePeriod)
		}
		if err := validateValue(t.Signal, t.Value, false); err != nil {
			return err
		}
		if t.MinReclaim != nil {
			if err := validateValue(t.Signal, *t.MinReclaim, true); err != nil {
				return err
			}
		}
		if seen[t.key()] {
			kind := "hard"
			if t.key().soft {
				kind = "soft"
			}
			return fmt.Errorf("%w: duplicate %s threshold for %s", ErrInvalidThreshold, kind, t.Signal)
		}
		seen[t.key()] = true
	}
	return nil
}

func validateValue(s Signal, v ThresholdValue, minReclaim bool) error {
	what := "threshold"
	if minReclaim {
		what = "minimum reclaim"
	}
	if v.Quantity != nil {
		if v.Percentage != 0 {
			return fmt.Errorf("%w: %s %s sets both a quantity and a percentage", ErrInvalidThreshold, s, what)
		}
		if v.Quantity.Sign() < 0 || (!minReclaim && v.Quantity.IsZero()) {
			return fmt.Errorf("%w: %s %s must be positive: %v", ErrInvalidThreshold, s, what, v.Quantity)
		}
		return nil
	}
	if !(v.Percentage > 0 && v.Percentage <= 1) {
		return fmt.Errorf("%w: %s %s percentage %v%% is out of range (0%%, 100%%]", ErrInvalidThreshold, s, what, v.Percentage*100)
	}
	return nil
}
