package nodestatus

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// ValidateKubeletLabels checks the labels a kubelet registers its Node
// with (--node-labels) as the kubelet does: valid keys and values, and in
// the kubernetes.io and k8s.io namespaces only the labels a kubelet may
// set on itself (the NodeRestriction admission plugin refuses others). A
// virtual-node provider with other credentials need not call it.
func ValidateKubeletLabels(labels map[string]string) error {
	var errs []error
	var unknown []string
	for k, v := range labels {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, fmt.Errorf("node label %q: %s", k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, fmt.Errorf("node label %q value %q: %s", k, v, msg))
		}
		if isKubernetesLabel(k) && !kubeletapis.IsKubeletLabel(k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		errs = append(errs, fmt.Errorf("unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: %v "+
			"(a kubelet may set only %v and labels under kubelet.kubernetes.io/ and node.kubernetes.io/)", unknown, kubeletapis.KubeletLabels()))
	}
	return errors.Join(errs...)
}

func isKubernetesLabel(key string) bool {
	ns, _, found := strings.Cut(key, "/")
	if !found {
		return false
	}
	for _, domain := range []string{"kubernetes.io", "k8s.io"} {
		if ns == domain || strings.HasSuffix(ns, "."+domain) {
			return true
		}
	}
	return false
}

// ParseTaints parses taints as --register-with-taints gives them:
// comma-separated key[=value]:Effect.
func ParseTaints(spec string) ([]v1.Taint, error) {
	var out []v1.Taint
	for _, item := range strings.Split(spec, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		kv, effect, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("taint %q: want key[=value]:effect", item)
		}
		key, value, _ := strings.Cut(kv, "=")
		t := v1.Taint{Key: key, Value: value, Effect: v1.TaintEffect(effect)}
		if err := ValidateTaint(t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// ValidateTaint checks a registration taint: a qualified key, a label
// value, and one of the three effects.
func ValidateTaint(t v1.Taint) error {
	var errs []error
	for _, msg := range validation.IsQualifiedName(t.Key) {
		errs = append(errs, fmt.Errorf("taint key %q: %s", t.Key, msg))
	}
	for _, msg := range validation.IsValidLabelValue(t.Value) {
		errs = append(errs, fmt.Errorf("taint %q value %q: %s", t.Key, t.Value, msg))
	}
	switch t.Effect {
	case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
	default:
		errs = append(errs, fmt.Errorf("taint %q effect %q: want NoSchedule, PreferNoSchedule or NoExecute", t.Key, t.Effect))
	}
	return errors.Join(errs...)
}

// AddResources sums resource lists (system and kube reservations and the
// eviction thresholds' share of allocatable).
func AddResources(lists ...v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for _, l := range lists {
		for name, q := range l {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}
