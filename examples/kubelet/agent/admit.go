package agent

import (
	"cmp"
	"context"
	"runtime"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/admission"
	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/nodestatus"
)

// implementedFeatures are the feature gates of the node-declared-features
// registry this agent implements: pod-level and init-container in-place
// resize (allocation, podsyncer) and the RestartAllContainers restart rule
// (podsyncer). The v1.36 kubelet also declares ExtendWebSocketsToKubelet;
// this agent does not, since kubeletapi does not translate WebSocket exec,
// attach and port-forward to the runtime's SPDY itself: undeclared, the
// API server translates them, as for an older kubelet.
var implementedFeatures = []string{"InPlacePodLevelResourcesVerticalScaling",
	"InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"}

// declaredFeatures are the node's status.declaredFeatures. User namespaces
// are not implemented, so UserNamespacesHostNetworkSupport is never
// declared whatever the runtime offers.
func declaredFeatures() ([]string, error) {
	return nodestatus.DiscoverDeclaredFeatures(implementedFeatures, ndf.RuntimeFeatures{}, nodestatus.DefaultKubeletVersion)
}

// buildAdmission assembles the kubelet's admit handlers in its order:
// eviction's, the node's declared features, sysctls (the safe set for this
// kernel plus the allowed unsafe ones), then the general predicates.
func (a *Agent) buildAdmission(ctx context.Context) error {
	kernel, err := admission.KernelVersion()
	if err != nil {
		klog.FromContext(ctx).Error(err, "Failed to get kernel version, unable to determine which sysctls are available")
	}
	sysctls, err := admission.Sysctls(append(admission.SafeSysctls(kernel), a.opts.AllowedUnsafeSysctls...))
	if err != nil {
		return err
	}
	predicates, err := admission.Predicates(admission.PredicatesConfig{Node: a.admissionNode, IsStatic: kubetypes.IsStatic})
	if err != nil {
		return err
	}
	evict := admission.HandlerFunc(func(_ context.Context, attrs admission.Attributes) admission.Result {
		return a.evict.Admit(attrs.Pod)
	})
	declared, err := declaredFeatures()
	if err != nil {
		return err
	}
	features, err := admission.DeclaredFeatures(declared, nodestatus.DefaultKubeletVersion)
	if err != nil {
		return err
	}
	a.admit = admission.Chain{evict, features, sysctls, predicates}
	return nil
}

// admissionNode is the Node as last reported; fresh reads it from the API
// server. Before the Node exists (static pods start first) it is the node
// as the agent would register it: its name, OS labels and the capacity
// the simulator or the last report gave.
func (a *Agent) admissionNode(ctx context.Context, fresh bool) (*v1.Node, error) {
	if a.client != nil && fresh {
		return a.client.CoreV1().Nodes().Get(ctx, a.opts.NodeName, metav1.GetOptions{})
	}
	if a.nodeStatus != nil {
		if n := a.nodeStatus.Node(); n != nil {
			return n, nil
		}
	}
	alloc, err := a.nodeAllocatable()
	if err != nil {
		return nil, err
	}
	labels := map[string]string{v1.LabelHostname: a.hostname(), v1.LabelOSStable: runtime.GOOS, v1.LabelArchStable: runtime.GOARCH}
	for k, v := range a.opts.NodeLabels {
		labels[k] = v
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: a.opts.NodeName, Labels: labels},
		Spec: v1.NodeSpec{Taints: a.opts.RegisterWithTaints}, Status: v1.NodeStatus{Allocatable: alloc}}, nil
}

// nodeAllocatable is what the node status setters would report as
// allocatable: cores, memory, ephemeral storage and max pods, less what is
// reserved.
func (a *Agent) nodeAllocatable() (v1.ResourceList, error) {
	machine, storage := a.machine()
	info, err := machine()
	if err != nil {
		return nil, err
	}
	out := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(int64(info.NumCores)*1000, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(int64(info.MemoryCapacity), resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(int64(cmp.Or(a.opts.MaxPods, nodestatus.DefaultMaxPods)), resource.DecimalSI),
	}
	for k, v := range storage() {
		out[k] = v
	}
	return subtract(out, a.reserved(out)), nil
}
