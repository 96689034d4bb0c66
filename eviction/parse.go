package eviction

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// DefaultEvictionHard returns the kubelet's hard eviction thresholds on
// Linux, used when no hard thresholds are configured. A fresh map is
// returned on each call.
func DefaultEvictionHard() map[string]string {
	return map[string]string{
		"memory.available":   "100Mi",
		"nodefs.available":   "10%",
		"nodefs.inodesFree":  "5%",
		"imagefs.available":  "15%",
		"imagefs.inodesFree": "5%",
	}
}

// ThresholdSpec is the eviction part of a KubeletConfiguration: maps from
// signal name to value, as in the config file.
type ThresholdSpec struct {
	// Hard maps a signal to a quantity ("100Mi") or percentage ("10%").
	// nil means DefaultEvictionHard(); a non-nil empty map means no hard
	// thresholds. "0%" and "100%" disable a signal.
	Hard map[string]string
	// Soft has the syntax of Hard; every entry needs a SoftGracePeriod.
	Soft map[string]string
	// SoftGracePeriod maps a signal to a Go duration ("1m30s").
	SoftGracePeriod map[string]string
	// MinimumReclaim maps a signal to a quantity or percentage applied to
	// every threshold (hard and soft) on that signal.
	MinimumReclaim map[string]string
	// MergeDefaults fills signals missing from a non-nil Hard with
	// DefaultEvictionHard (upstream's mergeDefaultEvictionSettings).
	MergeDefaults bool
	// NoAllocatableThreshold turns off upstream's behaviour for
	// enforceNodeAllocatable containing "pods" (its default): copying the
	// hard memory.available threshold to allocatableMemory.available.
	NoAllocatableThreshold bool
}

// ParseThresholdFlags parses kubelet flag values: hard and soft as
// "memory.available<100Mi,nodefs.available<10%", softGracePeriod as
// "memory.available=1m30s" and minimumReclaim as "memory.available=0Mi".
// An empty hard means the flag was not given, so the defaults apply; use
// ParseThresholds with a non-nil empty Hard for no hard thresholds.
func ParseThresholdFlags(hard, soft, softGracePeriod, minimumReclaim string) ([]Threshold, error) {
	var spec ThresholdSpec
	var err error
	if strings.TrimSpace(hard) != "" {
		if spec.Hard, err = parseFlagList("eviction-hard", hard, '<'); err != nil {
			return nil, err
		}
	}
	if spec.Soft, err = parseFlagList("eviction-soft", soft, '<'); err != nil {
		return nil, err
	}
	if spec.SoftGracePeriod, err = parseFlagList("eviction-soft-grace-period", softGracePeriod, '='); err != nil {
		return nil, err
	}
	if spec.MinimumReclaim, err = parseFlagList("eviction-minimum-reclaim", minimumReclaim, '='); err != nil {
		return nil, err
	}
	return ParseThresholds(spec)
}

// parseFlagList splits "k<v,k<v" (sep '<') or "k=v,k=v" (sep '=').
func parseFlagList(flag, value string, sep byte) (map[string]string, error) {
	out := map[string]string{}
	for item := range strings.SplitSeq(value, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		i := strings.IndexByte(item, sep)
		if sep == '<' {
			if j := strings.IndexAny(item, "<>="); j >= 0 && (i != j || strings.HasPrefix(item[j+1:], "=")) {
				op := item[j : j+1]
				if len(item) > j+1 && item[j+1] == '=' {
					op += "="
				}
				return nil, fmt.Errorf("%w: --%s %q: unsupported operator %q, only \"<\" is allowed", ErrInvalidThreshold, flag, item, op)
			}
		}
		if i <= 0 {
			return nil, fmt.Errorf("%w: --%s %q: expected signal%cvalue", ErrInvalidThreshold, flag, item, sep)
		}
		k, v := strings.TrimSpace(item[:i]), strings.TrimSpace(item[i+1:])
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%w: --%s: duplicate signal %q", ErrInvalidThreshold, flag, k)
		}
		out[k] = v
	}
	return out, nil
}

// ParseThresholds turns a ThresholdSpec into validated thresholds, hard
// before soft, each group in the order of Signals(). Errors wrap
// ErrInvalidThreshold and name the offending signal and value.
func ParseThresholds(spec ThresholdSpec) ([]Threshold, error) {
	hardSpec := spec.Hard
	if hardSpec == nil {
		hardSpec = DefaultEvictionHard()
	} else if spec.MergeDefaults {
		hardSpec = mergeDefaults(hardSpec)
	}
	hard, err := parseStatements("hard", hardSpec)
	if err != nil {
		return nil, err
	}
	soft, err := parseStatements("soft", spec.Soft)
	if err != nil {
		return nil, err
	}
	grace, err := parseGracePeriods(spec.SoftGracePeriod)
	if err != nil {
		return nil, err
	}
	reclaim, err := parseMinReclaims(spec.MinimumReclaim)
	if err != nil {
		return nil, err
	}
	for i := range soft {
		g, ok := grace[soft[i].Signal]
		if !ok {
			return nil, fmt.Errorf("%w: soft threshold %s has no grace period", ErrInvalidThreshold, soft[i].Signal)
		}
		soft[i].GracePeriod = g
	}
	out := append(slices.Clip(hard), soft...)
	for i := range out {
		if r, ok := reclaim[out[i].Signal]; ok {
			out[i].MinReclaim = &r
		}
	}
	if !spec.NoAllocatableThreshold && !slices.ContainsFunc(out, func(t Threshold) bool {
		return t.Signal == SignalAllocatableMemoryAvailable && t.IsHard()
	}) {
		for _, t := range out {
			if t.Signal == SignalMemoryAvailable && t.IsHard() {
				t.Signal = SignalAllocatableMemoryAvailable
				out = append(out, t)
				break
			}
		}
	}
	if err := validateThresholds(out); err != nil {
		return nil, err
	}
	return out, nil
}

func mergeDefaults(m map[string]string) map[string]string {
	out := DefaultEvictionHard()
	for k, v := range m {
		out[k] = v
	}
	return out
}

func signalOf(name string) (Signal, error) {
	s := Signal(name)
	if !s.Valid() {
		return "", fmt.Errorf("%w: unknown signal %q", ErrInvalidThreshold, name)
	}
	return s, nil
}

// parseStatements parses kind ("hard" or "soft") statements in the stable
// signal order.
func parseStatements(kind string, m map[string]string) ([]Threshold, error) {
	var out []Threshold
	for _, name := range sortedKeys(m) {
		s, err := signalOf(name)
		if err != nil {
			return nil, err
		}
		v, ignore, err := parseValue(s, kind+" threshold", m[name], false)
		if err != nil {
			return nil, err
		}
		if !ignore {
			out = append(out, Threshold{Signal: s, Value: v})
		}
	}
	return out, nil
}

// parseValue parses a quantity or percentage. ignore is set for "0%" and
// "100%", which upstream treats as "no threshold".
func parseValue(s Signal, what, val string, minReclaim bool) (v ThresholdValue, ignore bool, err error) {
	val = strings.TrimSpace(val)
	if p, ok := strings.CutSuffix(val, "%"); ok {
		f, perr := strconv.ParseFloat(strings.TrimSpace(p), 32)
		if perr != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return v, false, fmt.Errorf("%w: %s %s: %q is not a percentage", ErrInvalidThreshold, s, what, val)
		}
		if f < 0 || f > 100 {
			return v, false, fmt.Errorf("%w: %s %s: percentage %q is out of range [0%%, 100%%]", ErrInvalidThreshold, s, what, val)
		}
		if !minReclaim && (f == 0 || f == 100) {
			return v, true, nil
		}
		if minReclaim && f == 0 {
			return v, false, fmt.Errorf("%w: %s %s: percentage must be positive: %q", ErrInvalidThreshold, s, what, val)
		}
		return ThresholdValue{Percentage: float32(f / 100)}, false, nil
	}
	q, qerr := resource.ParseQuantity(val)
	if qerr != nil {
		return v, false, fmt.Errorf("%w: %s %s: %q: %w", ErrInvalidThreshold, s, what, val, qerr)
	}
	if q.Sign() < 0 || (!minReclaim && q.IsZero()) {
		return v, false, fmt.Errorf("%w: %s %s must be positive: %q", ErrInvalidThreshold, s, what, val)
	}
	return ThresholdValue{Quantity: &q}, false, nil
}

func parseGracePeriods(m map[string]string) (map[Signal]time.Duration, error) {
	out := make(map[Signal]time.Duration, len(m))
	for name, val := range m {
		s, err := signalOf(name)
		if err != nil {
			return nil, err
		}
		d, err := time.ParseDuration(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("%w: %s grace period %q: %w", ErrInvalidThreshold, s, val, err)
		}
		if d <= 0 {
			return nil, fmt.Errorf("%w: %s grace period %q must be positive", ErrInvalidThreshold, s, val)
		}
		out[s] = d
	}
	return out, nil
}

func parseMinReclaims(m map[string]string) (map[Signal]ThresholdValue, error) {
	out := make(map[Signal]ThresholdValue, len(m))
	for name, val := range m {
		s, err := signalOf(name)
		if err != nil {
			return nil, err
		}
		v, _, err := parseValue(s, "minimum reclaim", val, true)
		if err != nil {
			return nil, err
		}
		out[s] = v
	}
	return out, nil
}

// sortedKeys returns known signals in Signals() order, then unknown names
// sorted, so that errors and results are deterministic.
func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, s := range Signals() {
		if _, ok := m[string(s)]; ok {
			out = append(out, string(s))
		}
	}
	var unknown []string
	for k := range m {
		if !Signal(k).Valid() {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	return append(unknown, out...)
}
