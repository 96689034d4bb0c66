// Package lease keeps a node's coordination.k8s.io/v1 Lease in the
// kube-node-lease namespace renewed, which is how the control plane learns
// that a node agent is alive.
//
// A controller renews the lease every quarter of its duration, updates from
// the last lease it wrote without a GET on the happy path, backs off on
// errors, sets an owner reference to the Node once it exists, and can renew
// the leases of many node names from one process with a bounded set of
// workers. All timing runs on an injected clock.
package lease
