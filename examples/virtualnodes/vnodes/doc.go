// Package vnodes runs many virtual Kubernetes nodes in one process, built
// from nodekit's blocks, with a bounded number of goroutines whatever the
// node count.
//
// # Model
//
//   - Liveness: one lease.Controller renews every node's Lease (many-node
//     mode: one timer, a pool of LeaseWorkers, first renewals spread over the
//     renew interval).
//   - Status: one nodestatus.Controller per node, with a short setter list:
//     fixed capacity (MachineInfo), GoRuntime, address and version info, the
//     three pressure conditions (always False) and Ready, whose runtime
//     errors are the Provider's Healthy. Run does not start a goroutine per
//     node: a one-second loop hands due nodes to StatusWorkers goroutines
//     that call Sync (every second until the node is reported Ready, then
//     every StatusUpdateFrequency). nodestatus patches only on change.
//   - Pods: one shared informer watches every pod bound to a node (a field
//     selector cannot name several nodes) and the handlers keep those of the
//     managed nodes. They go to one podworkers.Workers whose Syncer calls the
//     Provider: SyncPod creates the pod and reports its status,
//     SyncTerminatingPod stops it within the grace period, SyncTerminatedPod
//     reports the final status and, for a pod being deleted, deletes it with
//     grace 0 (what the kubelet's status manager does). A pod's status is
//     patched (strategic merge, UID precondition) only when it differs from
//     the last one sent.
//   - The same loop polls podworkers' due pods every second and runs
//     housekeeping (SyncKnownPods) every two, like the kubelet's sync loop.
//     Providers that implement PodNotifier get a sync of a pod as soon as they
//     report it changed. This loop stands where syncloop and pleg stand in
//     examples/kubelet: a provider has no CRI runtime to relist (its
//     notifications are the evented PLEG), and syncloop's per-node sources
//     would mean a watch or a snapshot diff per node where one shared
//     informer serves all (see the README, "Why not syncloop and pleg").
//   - Kubelet API (Config.API): one kubeletapi.Server in MultiNode mode for
//     all nodes, whose port every node reports in
//     status.daemonEndpoints. It lists the agent's pods with their latest
//     status and serves kubectl logs, exec, attach and port-forward through
//     the Provider's optional LogProvider and ExecProvider (in process, with
//     kubeletapi.NewInlineStreamer). It runs inside Run and stops with it.
//
// # Host duties
//
//  1. Build clients: a main client for pods and nodes and a heartbeat client
//     (lease.HeartbeatRESTConfig). One credential serves every node; with node
//     identities (Node authorizer, NodeRestriction) each node would need its
//     own credential, which this program does not do.
//  2. Pick a Provider: NewSimulated, or your own.
//  3. New(Config) and Run(ctx) in a goroutine; cancel ctx to stop. The Nodes
//     and Leases are left behind: the control plane marks the nodes
//     NotReady once their leases expire.
//
// # Differences from a kubelet
//
//   - No node informer: nodestatus diffs against the Node it wrote last.
//   - No probes, volumes, images, eviction or static pods; the Provider owns
//     everything below "pod is running".
//   - One kubelet API server and one port for all nodes, authorized on every
//     node (no node name in the review); no stats, metrics or /run.
//   - Node status Ready is recomputed every StatusUpdateFrequency; a change of
//     provider health is not pushed sooner.
package vnodes
