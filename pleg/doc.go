// Package pleg is a pod lifecycle event generator: it turns the state of a
// CRI container runtime into PodLifecycleEvents (container started, died,
// removed, changed, pod sync) that a sync loop acts on, and keeps a cache of
// pod statuses that pod workers read.
//
// # Model
//
// A [Generator] talks to the runtime through [RuntimeService], a five-method
// subset of the CRI runtime service that k8s.io/cri-client's
// NewRemoteRuntimeService satisfies. Its core is synchronous:
//
//   - [Generator.Relist] lists every sandbox and container (two calls),
//     groups them by pod UID (the sandbox metadata's UID; a container whose
//     sandbox is not listed goes by its io.kubernetes.pod.uid label),
//     compares each pod with the previous listing and, only for pods that
//     changed or await re-inspection, fetches PodSandboxStatus and
//     ContainerStatus of each of their sandboxes and containers, at most
//     Config.StatusParallelism calls at a time. As each pod's statuses
//     arrive, its [PodStatus] is stored in the [Cache] and its events are
//     emitted. Then the cache's global timestamp moves to the instant the
//     listing started, releasing waiters.
//   - [Generator.RelistPod] does the same for one pod, listing by label.
//
// Events follow upstream's transition table for every container and
// sandbox (see [Transition]); ContainerChanged is computed but, like
// upstream, not delivered unless Config.DeliverContainerChanged is set. A
// pod that re-inspection finds unchanged gets a PodSync. A pod whose status
// fetch fails emits nothing, keeps its previous listing as the base of
// comparison, is cached with the error, and is inspected again by the next
// relist, so its events come then. A sandbox or container that vanished
// between the listing and its status call is left out of the status; the
// next listing reports it removed.
//
// [Generator.Run] adds the loop: a relist at once and every RelistPeriod
// (1s), single-pod relists on [Generator.RequestRelist], and in evented mode
// (Config.Evented) the runtime's GetContainerEvents stream. Runtime events
// are only hints: each one requests a single-pod relist of its pod, so the
// cache has one writer and cannot hold duplicated or reordered state. While
// the stream is connected a safety-net relist runs every
// EventedRelistPeriod (300s); when it breaks, the generator relists at once,
// falls back to RelistPeriod and reconnects with exponential backoff (1s to
// 1m); on reconnection it relists again to catch what it missed.
//
// Every CRI call is bounded by Config.RuntimeRequestTimeout on the injected
// clock; all timing (periods, timeouts, backoff, timestamps) uses
// Config.Clock.
//
// # Delivery never loses a pod
//
// Events go to a buffered channel ([Generator.Events]). When it is full,
// the event is not dropped: its pod is owed one PodSync, later events of
// that pod fold into the same debt, and debts are paid in order as soon as
// the consumer makes room (Run pays them continuously; Relist pays what
// fits). Each folded event counts in [Generator.CoalescedEvents] and
// kubelet_pleg_discard_events. A PodSync tells the sync loop to sync the
// pod from the cache, which is already up to date.
//
// # Host duties
//
//  1. Connect a CRI runtime client (cri-client's NewRemoteRuntimeService)
//     and build the Generator with New.
//  2. Run it in a goroutine; cancel its context to stop it.
//  3. Give the events to the sync loop: set Config.Sink (for example
//     syncloop's Loop.HandlePLEGEvent; no goroutine of yours), or consume
//     Events from one goroutine, promptly.
//  4. Give pod workers Cache().WaitNewerThan as their status barrier and
//     read statuses with Cache().Get.
//  5. Report Healthy (a func() error, nil when healthy) in the node's
//     runtime health checks: syncloop's Config.RuntimeHealth and
//     nodestatus' ReadyConfig take it as is. It fails until the first
//     full relist completed ("pleg has yet to be successful", as upstream)
//     and after RelistThreshold, 3m, without one: call Relist once before
//     starting loops that gate on it, or they back off until Run's first
//     relist.
//  6. Call RequestRelist(uid) after acting on a pod (for example after
//     SyncPod) to see its new state without waiting for the period.
//
// In code:
//
//	rt, _ := remote.NewRemoteRuntimeService(ctx, endpoint, 2*time.Minute, nil, false)
//	cache := pleg.NewCache() // first: pod workers wait on it
//	workers, _ := podworkers.New(podworkers.Config{StatusBarrier: cache.WaitNewerThan, ...})
//	// ... the sync loop (syncloop package doc) ...
//	gen, err := pleg.New(pleg.Config{Runtime: rt, Evented: true, RuntimeName: "containerd",
//		Cache: cache, Sink: loop.HandlePLEGEvent})
//	if err != nil { return err }
//	if _, err := gen.Relist(ctx); err != nil { return err } // healthy from the start
//	go gen.Run(ctx)
//
// # Metrics
//
// With Config.Registerer set, the generator registers the kubelet's PLEG
// families under upstream's names, help and buckets:
// kubelet_pleg_relist_duration_seconds, kubelet_pleg_relist_interval_seconds,
// kubelet_pleg_pod_relist_duration_seconds, kubelet_pleg_last_seen_seconds,
// kubelet_pleg_discard_events, kubelet_evented_pleg_connection_success_count,
// kubelet_evented_pleg_connection_error_count and
// kubelet_evented_pleg_connection_latency_seconds; kubelet_running_pods
// (pods with a ready sandbox) and kubelet_running_containers{container_state}
// (created, running, exited, unknown), read from the cache at each scrape;
// and nodekit_pleg_events_total{type}. A second generator on the same
// registry is refused by New.
//
// # Testing
//
// Package plegtest is an in-memory RuntimeService (pods, containers, CRI
// events, injected errors) for tests of a host's use of the generator,
// without a gRPC server or a container runtime.
//
// # Differences from upstream (k8s.io/kubernetes/pkg/kubelet/pleg v1.36)
//
//   - Status fetches are parallel (StatusParallelism, default 16) and use
//     the IDs of the listing directly: no per-pod ListPodSandbox and
//     ListContainers, no serial walk (kubernetes#93886).
//   - A full event channel never drops an event after records advanced;
//     the pod gets a PodSync instead (see above). kubelet_pleg_discard_events
//     counts the folded events.
//   - Evented mode uses events as hints for single-pod relists instead of
//     writing statuses built from events into the cache next to the relist,
//     which let upstream cache stale or duplicate containers. It reconnects
//     forever with backoff instead of giving up after 5 attempts, and it
//     releases a pod worker waiting for fresh status with a single-pod
//     relist rather than by advancing the global timestamp every 5s
//     without looking at the runtime.
//   - RequestRelist is always on (upstream: PLEGOnDemandRelist gate) and
//     never drops a request; requests coalesce per pod.
//   - The cache's GetNewerThan and WaitNewerThan take a context; freshness
//     is strictly newer than the given time, for cached and uncached pods
//     alike; Set always refuses data older than what is cached.
//   - PodStatus holds CRI statuses (no kubecontainer types); its Timestamp
//     is the start of the listing it is based on.
//   - Healthy's error wraps ErrUnhealthy and carries the last relist error;
//     there is no separate evented health rule (the channel cannot be
//     "full" in a harmful way).
//   - Events travel by value, to a sink function or on a
//     <-chan PodLifecycleEvent; a container event's ID is a typed
//     containerid.ID instead of Data any.
//   - Healthy returns an error (nil: healthy) instead of (bool, error).
//   - A failed status fetch is cached as a nil status with its error
//     (upstream caches whatever partial status the runtime call returned);
//     the pod is fetched again at the next relist.
//   - RequestReinspect of a pod not listed yet waits for the pod, for up
//     to RelistThreshold, instead of being dropped by the next relist.
//   - kubelet_running_pods and kubelet_running_containers are computed from
//     the cache when scraped (upstream sets them at each full relist, and
//     evented mode adjusts them event by event); every container_state is
//     reported, 0 included, so a state whose last container went away reads
//     0 instead of keeping its last count. A pod whose status fetch failed
//     counts again once a fetch succeeds.
package pleg
