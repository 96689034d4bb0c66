// Package downward resolves the downward API for a node agent: the
// pod fields (fieldRef) and container resources (resourceFieldRef) a pod
// may read about itself, as files in a downwardAPI or projected volume and,
// later, as environment variables. Values are formatted as the kubelet
// formats them, so a workload sees the same bytes on either agent.
package downward
