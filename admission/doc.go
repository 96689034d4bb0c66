// Package admission decides whether a node agent may run a pod
// before anything of it is created, as the kubelet's admit handlers do.
//
// A Handler looks at the pod and at the pods the node already runs and
// returns a Result; a rejected pod is failed with the Result's Reason and
// Message (phase Failed, an event), never started. Chain runs handlers in
// order and stops at the first rejection, as the kubelet does.
//
// Three handlers are built in, with the kubelet's reasons and messages:
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
//   - DeclaredFeatures: the node features a pod needs (inferred by
//     k8s.io/component-helpers/nodedeclaredfeatures, the registry the API
//     server and the scheduler share) against the node's
//     status.declaredFeatures (PodFeatureUnsupported).
//
// Node selector and affinity matching and pod request totals come from
// k8s.io/component-helpers, the code the scheduler and the kubelet share.
//
// # Host duties
//
// The host builds the chain (eviction's admit check first, as the kubelet
// orders it, then DeclaredFeatures, Sysctls and Predicates with the node
// as it is now) and
// asks it for each new pod, oldest first, with the pods admitted before it
// (podhandler does this); it fails a refused pod. Each handler is usable
// alone.
//
// # Differences from upstream
//
// There is no device, topology or CPU/memory manager admission; extended
// resources are checked against allocatable only. The kubelet also checks
// a running pod's spec updates against the declared features and records a
// FailedNodeDeclaredFeaturesCheck event; that check is not here (the API
// server's NodeDeclaredFeatures admission refuses such updates first).
package admission
