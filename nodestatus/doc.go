// Package nodestatus builds and reports the status of a Kubernetes Node the
// way the kubelet does.
//
// Its building block is the Setter, a function that fills one part of a
// *v1.Node (addresses, capacity and allocatable, version information, daemon
// endpoints, images, pressure conditions and, always last, the Ready
// condition). A controller registers the Node with the API server, computes
// the status on a short period and patches the status subresource only when
// something other than heartbeat timestamps changed, or when the report
// period has passed.
//
// The package does not import any other nodekit package: pressure, runtime and
// network health reach it as plain functions supplied by the host program.
package nodestatus
