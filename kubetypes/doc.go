// Package kubetypes is the pod vocabulary nodekit's blocks share: the pod
// sources' names and annotation keys, and the predicates and names the
// kubelet derives from them (static and mirror pods, sidecar containers,
// a pod's full name). Values are upstream's (k8s.io/kubernetes
// pkg/kubelet/types), so pods look the same to the control plane.
//
// It is a leaf: it imports only k8s.io/api, and any block may import it.
package kubetypes
