package admission

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"
)

func testNode() *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a", v1.LabelOSStable: "linux"}},
		Spec:       v1.NodeSpec{Taints: []v1.Taint{{Key: "soft", Effect: v1.TaintEffectNoSchedule}}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"),
			v1.ResourcePods: resource.MustParse("3"), "example.com/gpu": resource.MustParse("1"),
		}},
	}
}

func podRequesting(name string, req v1.ResourceList) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}}}}
}

func newPredicates(t *testing.T, node *v1.Node) Handler {
	t.Helper()
	h, err := Predicates(PredicatesConfig{OS: "linux", Node: func(context.Context, bool) (*v1.Node, error) { return node, nil },
		IsStatic: func(p *v1.Pod) bool { return p.Annotations["static"] == "yes" }})
	require.NoError(t, err)
	return h
}

func TestPredicates(t *testing.T) {
	cpu := func(s string) v1.ResourceList { return v1.ResourceList{v1.ResourceCPU: resource.MustParse(s)} }
	busy := podRequesting("busy", v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m"), v1.ResourceMemory: resource.MustParse("1Gi")})
	busy.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
	for name, tc := range map[string]struct {
		mutate          func(*v1.Pod)
		others          []*v1.Pod
		reason, message string
	}{
		"fits": {mutate: func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests = cpu("500m") }, others: []*v1.Pod{busy}},
		"cpu": {
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests = cpu("600m") }, others: []*v1.Pod{busy},
			reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000",
		},
		"memory before extended, overhead counts": {
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse("3Gi"), "example.com/gpu": resource.MustParse("2")}
				p.Spec.Overhead = v1.ResourceList{v1.ResourceMemory: resource.MustParse("1")}
			},
			others: []*v1.Pod{busy},
			reason: "OutOfmemory", message: "Node didn't have enough resource: memory, requested: 3221225473, used: 1073741824, capacity: 4294967296",
		},
		"extended": {
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources.Requests = v1.ResourceList{"example.com/gpu": resource.MustParse("2")}
			},
			reason: "OutOfexample.com/gpu", message: "Node didn't have enough resource: example.com/gpu, requested: 2, used: 0, capacity: 1",
		},
		"extended the node lacks is ignored": {
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources.Requests = v1.ResourceList{"example.com/fpga": resource.MustParse("1")}
			},
		},
		"hugepages the node lacks are not": {
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources.Requests = v1.ResourceList{"hugepages-2Mi": resource.MustParse("2Mi")}
			},
			reason: "OutOfhugepages-2Mi", message: "Node didn't have enough resource: hugepages-2Mi, requested: 2097152, used: 0, capacity: 0",
		},
		"init containers: the largest counts": {
			mutate: func(p *v1.Pod) {
				p.Spec.InitContainers = []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{Requests: cpu("2500m")}}}
			},
			reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 2500, used: 0, capacity: 2000",
		},
		"pods": {
			others: []*v1.Pod{podRequesting("a", nil), podRequesting("b", nil), podRequesting("c", nil)},
			reason: "OutOfpods", message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3",
		},
		"node selector": {
			mutate: func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} },
			reason: "NodeAffinity", message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
		},
		"required affinity": {
			mutate: func(p *v1.Pod) {
				p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
					NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}}
			},
		},
		"node name": {
			mutate: func(p *v1.Pod) { p.Spec.NodeName = "n2" },
			reason: "NodeName", message: "Predicate NodeName failed: node(s) didn't match the requested node name",
		},
		"host port in use": {
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 81, HostPort: 8080, HostIP: "10.0.0.1"}}
			},
			others: []*v1.Pod{busy},
			reason: "NodePorts", message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
		},
		"host port other protocol": {
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 81, HostPort: 8080, Protocol: v1.ProtocolUDP}}
			},
			others: []*v1.Pod{busy},
		},
		"NoExecute taint": {
			mutate: func(p *v1.Pod) {}, reason: "TaintToleration",
			message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
		},
		"static pods tolerate": {mutate: func(p *v1.Pod) { p.Annotations = map[string]string{"static": "yes"} }},
		"spec.os": {
			mutate: func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Windows} },
			reason: "PodOSNotSupported", message: "Failed to admit pod as the OS field doesn't match node OS",
		},
		"os label": {
			mutate: func(p *v1.Pod) { p.Labels = map[string]string{v1.LabelOSStable: "windows"} },
			reason: "PodOSSelectorNodeLabelDoesNotMatch", message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
		},
		"strict supplemental groups on a node without support": {
			mutate: func(p *v1.Pod) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: ptr.To(v1.SupplementalGroupsPolicyStrict)}
			},
			reason: "SupplementalGroupsPolicyNotSupported", message: "SupplementalGroupsPolicy=Strict is not supported in this node",
		},
	} {
		t.Run(name, func(t *testing.T) {
			node := testNode()
			if name == "NoExecute taint" || name == "static pods tolerate" {
				node.Spec.Taints = append(node.Spec.Taints, v1.Taint{Key: "hard", Effect: v1.TaintEffectNoExecute})
			}
			pod := podRequesting("p", nil)
			if tc.mutate != nil {
				tc.mutate(pod)
			}
			r := newPredicates(t, node).Admit(context.Background(), Attributes{Pod: pod, OtherPods: tc.others})
			assert.Equal(t, Result{Admit: tc.reason == "", Reason: tc.reason, Message: tc.message}, r)
		})
	}
}

func TestPredicatesRereadNodeOnlyForNodeState(t *testing.T) {
	stale, fresh := testNode(), testNode()
	fresh.Labels["zone"] = "b"
	var reads []bool
	h, err := Predicates(PredicatesConfig{Node: func(_ context.Context, f bool) (*v1.Node, error) {
		reads = append(reads, f)
		if f {
			return fresh, nil
		}
		return stale, nil
	}})
	require.NoError(t, err)
	pod := podRequesting("p", nil)
	pod.Spec.NodeSelector = map[string]string{"zone": "b"}
	assert.True(t, h.Admit(context.Background(), Attributes{Pod: pod}).Admit, "a label added a moment ago is seen")
	assert.Equal(t, []bool{false, true}, reads)

	reads = nil
	pod.Spec.NodeName = "elsewhere"
	assert.Equal(t, "NodeAffinity", h.Admit(context.Background(), Attributes{Pod: pod}).Reason, "the first failure in the kubelet's order")
	assert.Equal(t, []bool{false}, reads, "no fresh read when a failure does not depend on the Node")

	// A NoExecute taint removed a moment ago (the NoExecuteTaintManager
	// conformance specs do that) no longer rejects.
	stale.Spec.Taints = []v1.Taint{{Key: "gone", Effect: v1.TaintEffectNoExecute}}
	reads = nil
	pod.Spec.NodeName = ""
	assert.True(t, h.Admit(context.Background(), Attributes{Pod: pod}).Admit)
	assert.Equal(t, []bool{false, true}, reads)
}

func TestPredicatesNodeErrors(t *testing.T) {
	_, err := Predicates(PredicatesConfig{})
	require.Error(t, err)
	h, err := Predicates(PredicatesConfig{Node: func(context.Context, bool) (*v1.Node, error) { return nil, errors.New("boom") }})
	require.NoError(t, err)
	assert.Equal(t, Result{Reason: "InvalidNodeInfo", Message: "Kubelet cannot get node info."},
		h.Admit(context.Background(), Attributes{Pod: podRequesting("p", nil)}))
}

func TestSysctls(t *testing.T) {
	h, err := Sysctls(append(SafeSysctls(version.MustParseGeneric("5.10")), "kernel.msg*", "net.core.somaxconn"))
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		sysctl           string
		hostNet, hostIPC bool
		message          string
	}{
		"safe":                    {sysctl: "kernel.shm_rmid_forced"},
		"slashes":                 {sysctl: "kernel/shm_rmid_forced"},
		"prefix":                  {sysctl: "kernel.msgmax"},
		"prefix but host ipc":     {sysctl: "kernel.msgmax", hostIPC: true, message: `forbidden sysctl: "kernel.msgmax" not allowed with host IPC enabled`},
		"net but host network":    {sysctl: "net.core.somaxconn", hostNet: true, message: `forbidden sysctl: "net.core.somaxconn" not allowed with host Net enabled`},
		"not allowlisted":         {sysctl: "kernel.sem", message: `forbidden sysctl: "kernel.sem" not allowlisted`},
		"new kernel sysctl is in": {sysctl: "net.ipv4.tcp_rmem"},
	} {
		t.Run(name, func(t *testing.T) {
			pod := podRequesting("p", nil)
			pod.Spec.HostNetwork, pod.Spec.HostIPC = tc.hostNet, tc.hostIPC
			pod.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: tc.sysctl, Value: "1"}}}
			r := h.Admit(context.Background(), Attributes{Pod: pod})
			if tc.message == "" {
				assert.Equal(t, Admitted(), r)
			} else {
				assert.Equal(t, Result{Reason: "SysctlForbidden", Message: tc.message}, r)
			}
		})
	}
	assert.NotContains(t, SafeSysctls(version.MustParseGeneric("4.4")), "net.ipv4.tcp_keepalive_time")
	assert.Contains(t, SafeSysctls(nil), "net.ipv4.ip_local_port_range")
	for _, bad := range []string{"kernel.sem..x", "Kernel.X", "*", "fs.file-max", "vm.*"} {
		_, err := Sysctls([]string{bad})
		assert.Error(t, err, bad)
	}
}

func TestChainStopsAtFirstRejection(t *testing.T) {
	var calls []string
	h := func(name string, r Result) Handler {
		return HandlerFunc(func(context.Context, Attributes) Result { calls = append(calls, name); return r })
	}
	c := Chain{h("a", Admitted()), h("b", Result{Reason: "No"}), h("c", Admitted())}
	assert.Equal(t, Result{Reason: "No"}, c.Admit(context.Background(), Attributes{}))
	assert.Equal(t, []string{"a", "b"}, calls)
	assert.Equal(t, Admitted(), Chain{}.Admit(context.Background(), Attributes{}))
}
