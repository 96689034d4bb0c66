package kubetypes

import v1 "k8s.io/api/core/v1"

// Pod source names, the values of ConfigSourceAnnotationKey.
const (
	// FileSource is the static pod file source (--pod-manifest-path).
	FileSource = "file"
	// HTTPSource is the static pod URL source (--manifest-url).
	HTTPSource = "http"
	// APIServerSource is the API server source (pods bound to the node).
	APIServerSource = "api"
)

// AdmitResult is the one verdict of every admit decision on a pod: the
// admission chain's, the eviction manager's and the allocation manager's
// (a resize beside the other pods). A refused pod gets Reason and Message
// in its status and event.
type AdmitResult struct {
	// Admit is true if the pod may run.
	Admit bool
	// Reason is a CamelCase reason ("Evicted", "OutOfcpu").
	Reason string
	// Message says why, for a person.
	Message string
}

// Annotation keys the pod sources and the kubelet set.
const (
	// ConfigSourceAnnotationKey names the source a pod came from.
	ConfigSourceAnnotationKey = "kubernetes.io/config.source"
	// ConfigHashAnnotationKey carries the generated UID of a static pod.
	ConfigHashAnnotationKey = "kubernetes.io/config.hash"
	// ConfigFirstSeenAnnotationKey is when the pod was first seen, in
	// RFC 3339 with nanoseconds.
	ConfigFirstSeenAnnotationKey = "kubernetes.io/config.seen"
	// ConfigMirrorAnnotationKey marks a mirror pod; its value is the
	// static pod's ConfigHashAnnotationKey (v1.MirrorPodAnnotationKey).
	ConfigMirrorAnnotationKey = v1.MirrorPodAnnotationKey
)

// IsStatic reports whether pod came from a source other than the API
// server (a file or URL); its status goes to its mirror pod.
func IsStatic(pod *v1.Pod) bool {
	src, ok := pod.Annotations[ConfigSourceAnnotationKey]
	return ok && src != APIServerSource
}

// IsMirror reports whether pod is a mirror pod: the API server's copy of a
// static pod, which the kubelet never runs.
func IsMirror(pod *v1.Pod) bool {
	_, ok := pod.Annotations[ConfigMirrorAnnotationKey]
	return ok
}

// IsMirrorOf reports whether mirror is the mirror pod of static: the same
// name and namespace, and its mirror annotation holds the static pod's
// config hash.
func IsMirrorOf(mirror, static *v1.Pod) bool {
	if mirror.Name != static.Name || mirror.Namespace != static.Namespace {
		return false
	}
	hash, ok := mirror.Annotations[ConfigMirrorAnnotationKey]
	return ok && hash == static.Annotations[ConfigHashAnnotationKey]
}

// IsSidecar reports whether an init container is a sidecar: a restartable
// init container (restartPolicy Always), which keeps running beside the
// regular containers and is probed like them.
func IsSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// FullName is the kubelet's "<name>_<namespace>" key of a pod, unique on a
// node; static pods with the same full name run one at a time.
func FullName(pod *v1.Pod) string { return FullNameOf(pod.Name, pod.Namespace) }

// FullNameOf is FullName of a name and namespace.
func FullNameOf(name, namespace string) string { return name + "_" + namespace }

// MatchingRestartRule returns the first of c's restartPolicyRules whose
// exit codes match exitCode (In or NotIn), as upstream's
// FindMatchingContainerRestartRule.
func MatchingRestartRule(c *v1.Container, exitCode int32) (v1.ContainerRestartRule, bool) {
	for _, rule := range c.RestartPolicyRules {
		if rule.ExitCodes == nil {
			continue
		}
		in := false
		for _, v := range rule.ExitCodes.Values {
			if v == exitCode {
				in = true
				break
			}
		}
		if (rule.ExitCodes.Operator == v1.ContainerRestartRuleOnExitCodesOpIn && in) ||
			(rule.ExitCodes.Operator == v1.ContainerRestartRuleOnExitCodesOpNotIn && !in) {
			return rule, true
		}
	}
	return v1.ContainerRestartRule{}, false
}

// ContainerShouldRestart reports whether a container that exited with
// exitCode is started again: a matching restart rule whose action is
// Restart (or RestartAllContainers) says yes; otherwise the container's
// own restart policy decides, and without one the pod's — upstream's
// ContainerShouldRestart with ContainerRestartRules and
// RestartAllContainersOnContainerExits on, their v1.36 defaults. The
// container's rules and policy apply only when it sets a restart policy.
func ContainerShouldRestart(c *v1.Container, spec *v1.PodSpec, exitCode int32) bool {
	if c.RestartPolicy != nil {
		if rule, ok := MatchingRestartRule(c, exitCode); ok {
			switch rule.Action {
			case v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleActionRestartAllContainers:
				return true
			}
		}
		switch *c.RestartPolicy {
		case v1.ContainerRestartPolicyAlways:
			return true
		case v1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case v1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch spec.RestartPolicy {
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	case v1.RestartPolicyNever:
		return false
	}
	return true
}

// RestartsAllContainers reports whether c's exit with exitCode matches a
// restart rule whose action is RestartAllContainers.
func RestartsAllContainers(c *v1.Container, exitCode int32) bool {
	if c.RestartPolicy == nil {
		return false
	}
	rule, ok := MatchingRestartRule(c, exitCode)
	return ok && rule.Action == v1.ContainerRestartRuleActionRestartAllContainers
}

// ReasonRestartingAllContainers is the reason of the waiting state and the
// last termination state the kubelet reports for a container a
// RestartAllContainers reset removed.
const ReasonRestartingAllContainers = "RestartingAllContainers"

// MayRestartAllContainers reports whether an init or regular container of
// spec has a restart rule whose action is RestartAllContainers: such a pod
// may be reset in place (every container removed and started again from
// the first init container), and its status carries the
// AllContainersRestarting condition (upstream's AllContainersCouldRestart).
func MayRestartAllContainers(spec *v1.PodSpec) bool {
	for _, list := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			for _, r := range list[i].RestartPolicyRules {
				if r.Action == v1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}
