// Package nodestatus builds and reports the status of a Kubernetes Node the
// way the kubelet does, with the least API traffic.
//
// # Model
//
// A Setter fills one part of a *v1.Node. The constructors mirror the
// kubelet's: NodeAddress, MachineInfo, VersionInfo, DaemonEndpoints, Images,
// GoRuntime, RuntimeHandlers, NodeFeatures, DeclaredFeatures (from
// DiscoverDeclaredFeatures over the shared nodedeclaredfeatures registry),
// MemoryPressureCondition, DiskPressureCondition, PIDPressureCondition,
// ReadyCondition and VolumesInUse. Each takes the small functions it needs (the eviction
// manager's IsUnderMemoryPressure, the runtime's version, the image list),
// validates them, and returns (Setter, error); a Builder collects a list.
// Reasons, messages and event names are the kubelet's; a condition's
// transition time changes, and its event fires, only when its status flips.
//
// A Controller registers the Node (creating it with the default labels,
// your labels, taints and annotations, or reconciling an existing one) and
// then computes the status every UpdateFrequency (10s). It sends a two-way
// strategic merge PATCH to the status subresource only when something other
// than heartbeat times changed or ReportFrequency (5m, ±50% jitter after a
// change) has passed. In steady state a node therefore costs one PATCH per
// five minutes and no GET: the controller diffs against the Node the server
// returned last (or a lister the host supplies). It keeps that Node
// protobuf encoded without its managed fields, a fraction of a decoded
// one's size, which counts for a thousand virtual nodes in one process.
// Each update makes up to five tries, retries read from the server, and
// OnRepeatedFailure is called from the second failure.
//
// # Host duties
//
//  1. Build the setters from your subsystems (the cadvisorinfo subpackage
//     reads the real machine), ReadyCondition last.
//  2. Build a Controller with New: the client (a node-identity client
//     works: the Node authorizer lets a node create and patch itself), the
//     node name, labels and taints, the setters.
//  3. Call Run in a goroutine (or Sync from your own loop), and Trigger
//     when something the setters read changes and should be reported now
//     (the runtime became ready, pressure appeared).
//  4. Run the node Lease (package lease) beside it: the lease is the
//     liveness signal; status reports only carry changes.
//
// # Differences from upstream
//
//   - Without a lister the first try of an update reads nothing from the
//     server; the kubelet runs a Node informer for it. A write by someone
//     else to the fields this controller owns is therefore corrected at the
//     next change or the next failed try, not within seconds.
//   - The create that registers the Node counts as a report: no PATCH right
//     after registration.
//   - A Node deleted while the agent runs is registered again.
//   - A condition flip whose report failed keeps its first transition time
//     and emits one event, however many tries the report takes.
//   - Ready is kept last even when another writer appends conditions.
//   - Setters return errors (joined and logged by Apply; Sync returns them
//     wrapped in ErrSetters) instead of only logging them.
//   - No feature gates: runtime handlers, features and swap are reported
//     whenever the runtime provides them; kubeProxyVersion is cleared.
//   - The reboot event fires once per setter rather than once per process.
package nodestatus
