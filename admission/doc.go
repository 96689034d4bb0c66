// Package admission decides whether a node agent may run a pod
// before anything of it is created, as the kubelet's admit handlers do.
//
// A Handler looks at the pod and at the pods the node already runs and
// returns a Result; a rejected pod is failed with the Result's Reason and
// Message (phase Failed, an event), never started. Chain runs handlers in
// order and stops at the first rejection, as the kubelet does.
//
// Two handlers are built in, with the kubelet's reasons and messages:
//
//   - Predicates: the node's OS label and the pod's spec.os, resources
//     against the node's allocatable (OutOfcpu, OutOfmemory, OutOfpods,
//     OutOf<extended resource>), required node affinity and nodeSelector
//     (NodeAffinity), spec.nodeName (NodeName), host ports in use
//     (NodePorts) and NoExecute taints the pod does not tolerate
//     (TaintToleration; static pods are exempt).
//   - Sysctls: the pod's sysctls against an allowlist of names and
//     prefixes, the kubelet's safe set plus the --allowed-unsafe-sysctls
//     patterns (SysctlForbidden).
//
// Node selector and affinity matching and pod request totals come from
// k8s.io/component-helpers, the code the scheduler and the kubelet share.
//
// # Host duties
//
// The host builds the chain (eviction's admit check first, as the kubelet
// orders it, then Predicates and Sysctls with the node as it is now) and
// asks it for each new pod, oldest first, with the pods admitted before it
// (podhandler does this); it fails a refused pod. Each handler is usable
// alone.
//
// # Differences from upstream
//
// There is no device, topology or CPU/memory manager admission; extended
// resources are checked against allocatable only.
package admission
