package eviction

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/kubetypes"
)

// AdmitPod decides whether pod may be admitted on a node reporting the
// given pressure conditions, as upstream's eviction admit handler does:
//   - no pressure, or a critical pod: admit;
//   - only memory pressure: admit unless the pod is BestEffort and does not
//     tolerate the node.kubernetes.io/memory-pressure:NoSchedule taint;
//   - disk or PID pressure: reject.
func AdmitPod(conditions []v1.NodeConditionType, pod *v1.Pod) kubetypes.AdmitResult {
	if len(conditions) == 0 || IsCriticalPod(pod) {
		return kubetypes.AdmitResult{Admit: true}
	}
	if len(conditions) == 1 && conditions[0] == v1.NodeMemoryPressure {
		if !isBestEffort(pod) || toleratesMemoryPressure(pod.Spec.Tolerations) {
			return kubetypes.AdmitResult{Admit: true}
		}
	}
	return kubetypes.AdmitResult{
		Reason:  Reason,
		Message: fmt.Sprintf("The node had condition: %v. ", conditions),
	}
}

// toleratesMemoryPressure reports whether a toleration matches the
// memory-pressure NoSchedule taint (empty value).
func toleratesMemoryPressure(ts []v1.Toleration) bool {
	return slices.ContainsFunc(ts, func(t v1.Toleration) bool {
		if t.Effect != "" && t.Effect != v1.TaintEffectNoSchedule {
			return false
		}
		if t.Key != "" && t.Key != v1.TaintNodeMemoryPressure {
			return false
		}
		switch t.Operator {
		case v1.TolerationOpExists:
			return true
		case v1.TolerationOpEqual, "":
			return t.Key != "" && t.Value == ""
		}
		return false
	})
}
