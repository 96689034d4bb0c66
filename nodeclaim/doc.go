// Package nodeclaim keeps one live agent per node name. Two node agents
// started with the same node name (a copied state directory, a failover
// that did not stop the old host) would fight over the Node's status, its
// Lease and its pods; the kubelet does not guard against it.
//
// # Model
//
// Each agent instance has an identity kept under its root directory
// (LoadID): the same agent restarted on its state is the same agent. It
// registers the Node with the identity in the nodekit.io/agent-id
// annotation (Annotations). At start, Check refuses (ErrNodeClaimed) when
// the Node names another instance whose Lease was renewed within the lease
// duration; a claim whose Lease expired is taken over. While running,
// Setter (a nodestatus setter, put first) sees a takeover on the Node the
// API server returns and closes Done, so the host stops rather than fight.
// On a clean stop Release removes the identity (only while the Node still
// names this agent), so another agent may start at once.
//
// # Host duties
//
// Call LoadID once (it creates the file the first time), build the Claim,
// give Annotations to nodestatus registration and Setter to its setters,
// Check before running pods, stop when Done is closed, and Release on a
// clean stop. Lease and identity judgements use the injected clock.
//
// # Differences from upstream
//
// The kubelet has no such guard; the Lease's holderIdentity stays the node
// name (the control plane reads it), so instances are told apart by the
// annotation.
package nodeclaim
