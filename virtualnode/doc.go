// Package virtualnode is the virtual-kubelet-style seam of nodekit: a
// Provider runs pods somewhere else (a cloud container service, a remote
// cluster, an edge fleet, a simulator), and an Agent assembled from
// nodekit's blocks makes one or many Kubernetes nodes of it in one process,
// with a bounded number of goroutines whatever the node count. The
// Provider sees pods, not the API: the Agent registers the nodes, keeps
// their leases and status, watches the pods bound to them, runs each pod's
// state machine, writes pod status, deletes finished pods and serves the
// kubelet API. Package simulated is a Provider whose pods live in memory.
//
// # Model
//
//   - Liveness: one lease.Controller renews every node's Lease (many-node
//     mode: one timer, a pool of LeaseWorkers, first renewals spread over the
//     renew interval, and the leases due within LeaseBatchWindow renewed
//     together, early rather than one wake-up each). Heartbeats go first:
//     while a renewal is more than a fifth of the renew interval overdue
//     (2s with a 40s lease; the API server is too busy for them), pod
//     status patches and deletions wait, up to 10s each, as API priority
//     and fairness would give kubelets' heartbeats their own share and one
//     credential for many nodes does not; and the HeartbeatClient built
//     with lease.HeartbeatRESTConfig has a connection of its own, so
//     renewals never wait for a free HTTP/2 stream behind pod requests.
//   - Status: one nodestatus.Controller per node, with a short setter list:
//     fixed capacity (MachineInfo), GoRuntime, address and version info, the
//     three pressure conditions (always False) and Ready, whose runtime
//     errors are the Provider's Healthy. Run does not start a goroutine per
//     node: a one-second loop hands due nodes to StatusWorkers goroutines
//     that call Sync (every second until the node is reported Ready, then
//     every StatusUpdateFrequency). nodestatus patches only on change.
//   - Pods: one client-go Reflector watches every pod bound to a node (a
//     field selector cannot name several nodes) into a pod cache that keeps
//     those of the managed nodes, by UID, and hands each change to the
//     agent as an informer's handlers get it (the cache is the reflector's
//     store: no informer store and queue beside it). They go to one
//     podworkers.Workers whose Syncer calls the
//     Provider: SyncPod creates the pod and reports its status,
//     SyncTerminatingPod stops it within the grace period, SyncTerminatedPod
//     reports the final status and, for a pod being deleted, deletes it with
//     grace 0 (what the kubelet's status manager does). A pod's status is
//     merged with the one the API server has as the kubelet merges
//     (podstatus.Merge: conditions others own stay, a terminal phase stays)
//     and patched (strategic merge, UID precondition) only when that
//     differs. The agent keeps a 64-bit digest of the API's status of each
//     pod in the cache, and which of its parts are set, not the
//     status: "differs" compares digests, and each patch sends every status
//     field the agent owns that the cached pod does not show unchanged
//     (the IP lists and conditions whole) and clears what the server has
//     and the new status lacks, so it needs no copy of the server's status,
//     and leaves what others own alone. The cache keeps each pod encoded,
//     decoded for each event and sync (with TrimPodStatus with only the
//     status fields the agent does not write and the few a provider
//     adopting a pod reads), and the workers drop the pod of an idle worker
//     (podworkers.Config.LookupPod): a pod at rest costs its encoding, not
//     a decoded v1.Pod. Pods of nodes the agent does not serve are not
//     kept. Every pod a Provider method gets is its own copy.
//   - The same loop polls podworkers' due pods every second and runs
//     housekeeping (SyncKnownPods) every two, like the kubelet's sync loop,
//     but only when the cache delivered a pod change since the last
//     pass, else every 30s (a pass walks every pod).
//     Providers that implement PodNotifier get a sync of a pod as soon as they
//     report it changed. This loop stands where syncloop and pleg stand in
//     a CRI agent: a provider has no CRI runtime to relist (its
//     notifications are the evented PLEG), and syncloop's per-node sources
//     would mean a watch or a snapshot diff per node where one watch
//     serves all.
//   - Kubelet API (Config.API): one kubeletapi.Server in MultiNode mode for
//     all nodes, whose port every node reports in
//     status.daemonEndpoints. It lists the agent's pods with their latest
//     status and serves kubectl logs, exec, attach and port-forward through
//     the Provider's optional LogProvider and ExecProvider (in process, with
//     kubeletapi.NewInlineStreamer), and each node's stats summary and
//     resource metrics through its optional StatsProvider (for
//     metrics-server, kubectl top and HPAs). It runs inside Run and stops
//     with it.
//
// # Sharing nodes among replicas
//
// Sharded runs the same nodes from several replicas, through Kubernetes
// itself and no consensus of its own: the nodes are split into shards by a
// stable hash of their names (ShardOf, the same on every replica); each
// shard is owned through a coordination.k8s.io Lease (<prefix>-<i>); the
// replica holding it runs the shard's nodes as an Agent, all shards of a
// replica sharing one pod cache. The Lease rules are client-go leader
// election's, on the injected clock: a holder renews every RetryPeriod and
// stops the shard once no renewal succeeded for RenewDeadline, counted
// from when the last successful request was sent (the server may have
// committed it at any instant before its answer); each renewal runs under
// a context that ends there, and a timer stops the shard at that moment
// even while a request hangs. Another replica takes a Lease over only
// after seeing its record unchanged for its duration (whole seconds, more
// than RenewDeadline; its writes compare-and-swap on the resourceVersion),
// so the previous holder has stopped before (given clocks that run at the
// same rate and a shard that stops within LeaseDuration - RenewDeadline;
// a process frozen longer than that, as by a debugger, is not fenced).
// A replica that stops releases its Leases: the others take its shards at
// once. The node Leases outlive a takeover (40s against 15s), so the nodes
// stay Ready; pods keep running at the provider, which the new holder finds
// through CreatePod (the simulated provider adopts them as they are).
//
// # Porting a virtual-kubelet provider
//
// A provider written for virtual-kubelet (node.PodLifecycleHandler,
// node.PodNotifier, nodeutil.Provider, node.NodeProvider) maps onto this
// package method by method; Example_virtualKubeletProvider is a small
// adapter that does it.
//
//	virtual-kubelet                      virtualnode
//	CreatePod(ctx, pod)                  Provider.CreatePod(ctx, pod): called on every sync of a
//	                                     running pod, so the adapter calls CreatePod the first
//	                                     time and UpdatePod when the spec's generation moved
//	UpdatePod(ctx, pod)                  (the same call, see above)
//	DeletePod(ctx, pod)                  Provider.DeletePod(ctx, pod, grace): blocks until the
//	                                     containers stopped (the adapter waits for a terminal
//	                                     GetPodStatus); the Agent then writes the final status
//	                                     and deletes the pod object, which a VK provider must
//	                                     not do itself
//	GetPodStatus(ctx, ns, name)          Provider.PodStatus(ctx, pod); "not found" is nil, nil
//	GetPod, GetPods                      not needed: the Agent's pod cache and workers own the
//	                                     set of pods; housekeeping calls Provider.ForgetPod for
//	                                     each pod that is gone
//	PodNotifier.NotifyPods(ctx, cb)      PodNotifier.NotifyPods(notify): report a UID, the
//	                                     Agent reads the status back through PodStatus
//	GetContainerLogs(ns, pod, c, opts)   LogProvider.ContainerLogs: write to stdout and stderr
//	                                     instead of returning a reader; opts is the API's
//	                                     v1.PodLogOptions
//	RunInContainer, AttachToContainer,   ExecProvider (kubeletapi.ContainerRuntime): Exec,
//	PortForward                          Attach, PortForward with the streams as arguments
//	NodeProvider.Ping                    Provider.Healthy (must not block: keep the last
//	                                     ping's result)
//	NodeProvider.NotifyNodeStatus        not needed: nodestatus setters compute the Node
//	GetStatsSummary                      StatsProvider.PodStats(ctx, pod): per pod; the Agent sums
//	                                     each node's pods into its summary and serves it with
//	                                     Config.API (see StatsProvider)
//	GetMetricsResource                   not needed: the resource metrics are made from the
//	                                     summary, per node, at the path the Node's
//	                                     metrics.k8s.io/resource-metrics-path annotation names
//
// What a ported provider gains: the kubelet's pod state machine (podworkers:
// one worker per pod, grace periods that only shorten, termination ordered
// before deletion), status written only on change with a UID precondition,
// many nodes per process with one lease controller, an injected clock for
// tests, and the kubelet API's authentication and authorization.
//
// # Host duties
//
//  1. Build clients: a main client for pods and nodes and a heartbeat client
//     (lease.HeartbeatRESTConfig). One credential serves every node; with node
//     identities (Node authorizer, NodeRestriction) each node would need its
//     own credential, which this package does not do yet.
//  2. Pick a Provider: simulated.New, your own, or an adapted
//     virtual-kubelet provider.
//  3. New(Config) and Run(ctx) in a goroutine; cancel ctx to stop. The Nodes
//     and Leases are left behind: the control plane marks the nodes
//     NotReady once their leases expire.
//
// # Allowed edges
//
// virtualnode is an assembly: it imports the lease, nodestatus, podworkers
// and kubeletapi blocks (and the leaves).
//
// # Differences from a kubelet
//
//   - No node informer: nodestatus diffs against the Node it wrote last.
//   - No probes, volumes, images, eviction or static pods; the Provider owns
//     everything below "pod is running".
//   - One kubelet API server and one port for all nodes, authorized on every
//     node (no node name in the review); stats per node at their own paths
//     (not /stats/summary); no /metrics or /run.
//   - Node status Ready is recomputed every StatusUpdateFrequency; a change of
//     provider health is not pushed sooner.
package virtualnode
