package podsyncer

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// ReasonUnsupported is the rejection reason a host gives a pod for which
// Unsupported names something.
const ReasonUnsupported = "UnsupportedPodFeature"

// Unsupported names what pod asks of its containers that the Syncer does
// not do, "" if nothing. A host rejects such a pod at admission (reason
// ReasonUnsupported) rather than run it without what it asked for. Today:
// a restart rule with the action RestartAllContainers (the kubelet kills
// and restarts every container of the pod in its sandbox; the Syncer
// restarts one container at a time).
func Unsupported(pod *v1.Pod) string {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			for _, r := range list[i].RestartPolicyRules {
				if r.Action == v1.ContainerRestartRuleActionRestartAllContainers {
					return fmt.Sprintf("container %q: the restart rule action %s is not supported by this node agent",
						list[i].Name, v1.ContainerRestartRuleActionRestartAllContainers)
				}
			}
		}
	}
	return ""
}
