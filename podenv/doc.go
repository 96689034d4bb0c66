// Package podenv builds a container's environment the way the kubelet does:
// envFrom (configMaps and secrets, with prefixes), then env in order
// (literal values with $(VAR) expansion, configMap and secret keys, pod
// fields including status.podIPs and status.hostIPs, container resources
// with the node's allocatable as the default limit), then the service
// variables (KUBERNETES_SERVICE_HOST and, with enableServiceLinks, the
// services of the pod's namespace) where the pod set nothing of the same
// name. Errors carry the kubelet's messages; the syncer reports them as
// CreateContainerConfigError and does not start the container.
package podenv
