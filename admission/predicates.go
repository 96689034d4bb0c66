package admission

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	resourcehelper "k8s.io/component-helpers/resource"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// The kubelet's admission reasons (pkg/kubelet/lifecycle).
const (
	ReasonOSSelectorMismatch         = "PodOSSelectorNodeLabelDoesNotMatch"
	ReasonOSNotSupported             = "PodOSNotSupported"
	ReasonInvalidNodeInfo            = "InvalidNodeInfo"
	ReasonSupplementalGroupsPolicy   = "SupplementalGroupsPolicyNotSupported"
	ReasonUnexpectedAdmissionError   = "UnexpectedAdmissionError"
	ReasonInsufficientResourcePrefix = "OutOf"
	ReasonNodeAffinity               = "NodeAffinity"
	ReasonNodeName                   = "NodeName"
	ReasonNodePorts                  = "NodePorts"
	ReasonTaintToleration            = "TaintToleration"
)

// The scheduler's descriptions of the predicates, which the kubelet's
// messages quote.
const (
	descNodeAffinity = "node(s) didn't match Pod's node affinity/selector"
	descNodeName     = "node(s) didn't match the requested node name"
	descNodePorts    = "node(s) didn't have free ports for the requested pod ports"
	descTaints       = "node(s) had taints that the pod didn't tolerate"
)

// PredicatesConfig configures Predicates.
type PredicatesConfig struct {
	// Node returns the node the pods run on. fresh asks for a read that
	// bypasses caches; Predicates asks for one when every failure depends
	// on the Node object (node affinity, NoExecute taints, allocatable), as
	// a label, a taint or allocatable may have changed a moment ago (the
	// kubelet reads its Node from a watch). Required.
	Node func(ctx context.Context, fresh bool) (*v1.Node, error)
	// OS is the node's operating system; runtime.GOOS when empty.
	OS string
	// IsStatic tells static pods, which tolerate every taint; nil means
	// no pod is static.
	IsStatic func(*v1.Pod) bool
}

// Predicates returns the kubelet's general predicates as a Handler: the
// OS checks, supplementalGroupsPolicy support, resources, node affinity,
// node name, host ports and NoExecute taints, with the kubelet's reasons
// and messages. When several fail, the first in that order is reported.
func Predicates(cfg PredicatesConfig) (Handler, error) {
	if cfg.Node == nil {
		return nil, errors.New("admission: PredicatesConfig.Node is required")
	}
	if cfg.OS == "" {
		cfg.OS = runtime.GOOS
	}
	if cfg.IsStatic == nil {
		cfg.IsStatic = func(*v1.Pod) bool { return false }
	}
	return &predicates{cfg: cfg}, nil
}

type predicates struct{ cfg PredicatesConfig }

// failure is one failed predicate: reason and message as the pod shows
// them; nodeState marks a failure that depends on the Node object (node
// affinity, taints, allocatable), which a fresh node read may cure.
type failure struct {
	reason, message string
	nodeState       bool
}

func (p *predicates) Admit(ctx context.Context, attrs Attributes) Result {
	node, err := p.cfg.Node(ctx, false)
	if err != nil || node == nil {
		klog.FromContext(ctx).Error(err, "Cannot get Node info")
		return Result{Reason: ReasonInvalidNodeInfo, Message: "Kubelet cannot get node info."}
	}
	pod := attrs.Pod
	if want, ok := pod.Labels[v1.LabelOSStable]; ok {
		have := node.Labels[v1.LabelOSStable]
		if have != p.cfg.OS {
			have = p.cfg.OS // a missing or wrong node label counts as the node's real OS
		}
		if want != have {
			return Result{Reason: ReasonOSSelectorMismatch,
				Message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}
		}
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != p.cfg.OS {
		return Result{Reason: ReasonOSNotSupported, Message: "Failed to admit pod as the OS field doesn't match node OS"}
	}
	if strictGroupsUnsupported(pod, node) {
		return Result{Reason: ReasonSupplementalGroupsPolicy,
			Message: fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", v1.SupplementalGroupsPolicyStrict)}
	}
	fails := p.check(ctx, pod, node, attrs.OtherPods)
	if len(fails) > 0 && !slices.ContainsFunc(fails, func(f failure) bool { return !f.nodeState }) {
		if fresh, err := p.cfg.Node(ctx, true); err == nil && fresh != nil {
			fails = p.check(ctx, pod, fresh, attrs.OtherPods)
		}
	}
	if len(fails) == 0 {
		return Admitted()
	}
	klog.FromContext(ctx).V(2).Info("Predicate failed on Pod", "pod", klog.KObj(pod), "err", fails[0].message)
	return Result{Reason: fails[0].reason, Message: fails[0].message}
}

// check runs the resource, affinity, name, port and taint predicates and
// returns every failure, in the kubelet's order.
func (p *predicates) check(ctx context.Context, pod *v1.Pod, node *v1.Node, others []*v1.Pod) []failure {
	var fails []failure
	for _, r := range insufficient(pod, node, others) {
		fails = append(fails, failure{reason: ReasonInsufficientResourcePrefix + string(r.name), message: r.Error(), nodeState: true})
	}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		fails = append(fails, predicateFailure(ReasonNodeAffinity, descNodeAffinity))
		fails[len(fails)-1].nodeState = true
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		fails = append(fails, predicateFailure(ReasonNodeName, descNodeName))
	}
	if portsConflict(pod, others) {
		fails = append(fails, predicateFailure(ReasonNodePorts, descNodePorts))
	}
	if !p.cfg.IsStatic(pod) {
		noExecute := func(t *v1.Taint) bool { return t.Effect == v1.TaintEffectNoExecute }
		if _, untolerated := schedcorev1.FindMatchingUntoleratedTaint(klog.FromContext(ctx), node.Spec.Taints, pod.Spec.Tolerations, noExecute, false); untolerated {
			fails = append(fails, predicateFailure(ReasonTaintToleration, descTaints))
			fails[len(fails)-1].nodeState = true
		}
	}
	return fails
}

func predicateFailure(name, desc string) failure {
	return failure{reason: name, message: fmt.Sprintf("Predicate %s failed: %s", name, desc)}
}

// strictGroupsUnsupported: the pod asks for supplementalGroupsPolicy
// Strict and the node does not declare support for it.
func strictGroupsUnsupported(pod *v1.Pod, node *v1.Node) bool {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.SupplementalGroupsPolicy == nil || *sc.SupplementalGroupsPolicy != v1.SupplementalGroupsPolicyStrict {
		return false
	}
	f := node.Status.Features
	return f == nil || f.SupplementalGroupsPolicy == nil || !*f.SupplementalGroupsPolicy
}

// shortage is one resource the node lacks for the pod.
type shortage struct {
	name                      v1.ResourceName
	requested, used, capacity int64
}

// Error is the kubelet's message for an insufficient resource.
func (s shortage) Error() string {
	return fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
		s.name, s.requested, s.used, s.capacity)
}

// insufficient compares the pod's requests with the node's allocatable
// minus what the other pods request: the pod count first, then cpu,
// memory, ephemeral storage and the other resources by name. Extended
// resources the node does not have are ignored, as the kubelet does (a
// device plugin may not have registered yet).
func insufficient(pod *v1.Pod, node *v1.Node, others []*v1.Pod) []shortage {
	var out []shortage
	alloc := node.Status.Allocatable
	if allowed := alloc.Pods().Value(); int64(len(others))+1 > allowed {
		out = append(out, shortage{v1.ResourcePods, 1, int64(len(others)), allowed})
	}
	want := amounts(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	for name := range want {
		if isExtended(name) {
			if _, ok := alloc[name]; !ok {
				delete(want, name)
			}
		}
	}
	if len(want) == 0 {
		return out
	}
	used := map[v1.ResourceName]int64{}
	for _, o := range others {
		for name, v := range amounts(resourcehelper.PodRequests(o, resourcehelper.PodResourcesOptions{})) {
			used[name] += v
		}
	}
	have := amounts(alloc)
	names := make([]v1.ResourceName, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	order := map[v1.ResourceName]int{v1.ResourceCPU: 1, v1.ResourceMemory: 2, v1.ResourceEphemeralStorage: 3}
	slices.SortFunc(names, func(a, b v1.ResourceName) int {
		if oa, ob := order[a], order[b]; oa != ob {
			if oa == 0 {
				return 1
			}
			if ob == 0 {
				return -1
			}
			return oa - ob
		}
		return strings.Compare(string(a), string(b))
	})
	for _, name := range names {
		if w := want[name]; w > 0 && w > have[name]-used[name] {
			out = append(out, shortage{name, w, used[name], have[name]})
		}
	}
	return out
}

// amounts converts a resource list to the scheduler's units: millicores
// for cpu, plain values for the rest; resources the scheduler does not
// count (pods, unprefixed unknown names) are left out.
func amounts(list v1.ResourceList) map[v1.ResourceName]int64 {
	out := make(map[v1.ResourceName]int64, len(list))
	for name, q := range list {
		switch {
		case name == v1.ResourceCPU:
			out[name] = q.MilliValue()
		case name == v1.ResourceMemory, name == v1.ResourceEphemeralStorage:
			out[name] = q.Value()
		case isScalar(name):
			out[name] = q.Value()
		}
	}
	return out
}

// isScalar: the resources the scheduler tracks by name besides cpu,
// memory and ephemeral storage: extended resources, hugepages, prefixed
// native resources and attachable volumes.
func isScalar(name v1.ResourceName) bool {
	s := string(name)
	return isExtended(name) || strings.HasPrefix(s, v1.ResourceHugePagesPrefix) ||
		strings.Contains(s, v1.ResourceDefaultNamespacePrefix) || strings.HasPrefix(s, v1.ResourceAttachableVolumesPrefix)
}

// isExtended: a fully qualified resource name outside kubernetes.io, as
// a device plugin or the cluster administrator advertises it.
func isExtended(name v1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, v1.ResourceDefaultNamespacePrefix) || strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+s)) == 0
}

// hostPort is one (ip, protocol, port) a pod binds on the node.
type hostPort struct {
	ip, protocol string
	port         int32
}

// hostPorts lists the host ports of the pod's containers and sidecars,
// with the defaults the scheduler applies (all addresses, TCP).
func hostPorts(pod *v1.Pod) []hostPort {
	var out []hostPort
	add := func(ports []v1.ContainerPort) {
		for _, p := range ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := hostPort{ip: p.HostIP, protocol: string(p.Protocol), port: p.HostPort}
			if hp.ip == "" {
				hp.ip = "0.0.0.0"
			}
			if hp.protocol == "" {
				hp.protocol = string(v1.ProtocolTCP)
			}
			out = append(out, hp)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c.Ports)
		}
	}
	for _, c := range pod.Spec.Containers {
		add(c.Ports)
	}
	return out
}

// portsConflict: a host port of pod is bound by another pod, on the same
// address or on one of them binding all addresses.
func portsConflict(pod *v1.Pod, others []*v1.Pod) bool {
	want := hostPorts(pod)
	if len(want) == 0 {
		return false
	}
	for _, o := range others {
		for _, used := range hostPorts(o) {
			for _, w := range want {
				if w.port == used.port && w.protocol == used.protocol &&
					(w.ip == used.ip || w.ip == "0.0.0.0" || used.ip == "0.0.0.0") {
					return true
				}
			}
		}
	}
	return false
}
