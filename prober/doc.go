// Package prober runs liveness, readiness and startup probes (exec, HTTP GET,
// TCP socket and gRPC health) for the containers of a node's pods with the
// kubelet's semantics, and publishes their results without ever blocking a
// probe worker.
package prober
