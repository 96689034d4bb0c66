// Package syncloop is the kubelet's main loop as a small router: it merges
// pod configuration sources into one update stream and dispatches pod
// updates, pod lifecycle events, probe results, periodic syncs and
// housekeeping to a host-implemented Handler.
//
// Of the other blocks it imports only pleg and prober, for the event and
// result types it routes (edges hack/check-layering.sh names).
//
// # Model
//
// Producers never block. Sources send full snapshots (SetFunc, Loop.Set);
// a merger diffs each against the source's previous snapshot into ordered
// REMOVE, ADD, UPDATE, DELETE and RECONCILE updates, annotates pods with
// kubernetes.io/config.source and config.seen, and queues them.
// HandlePLEGEvent and HandleProbeUpdate queue into coalescing mailboxes
// (one pending sync per pod; the latest result per probe and container).
// Iterate is the synchronous one-pass core; Run runs the sources and calls
// Iterate when input arrives or timed work is due, on Config.Clock.
//
// Routing, as upstream's syncLoopIteration: ADD → HandlePodAdditions,
// UPDATE and DELETE → HandlePodUpdates, REMOVE → HandlePodRemoves,
// RECONCILE → HandlePodReconcile; PLEG events other than ContainerRemoved
// sync the pod, ContainerDied also calls OnContainerDied; a liveness
// failure syncs the pod; readiness and startup results call OnProbeResult
// and sync the pod; every SyncPeriod (1s) PodsToSync is asked; every
// HousekeepingPeriod (2s), once every source's first snapshot has been
// dispatched, HandlePodCleanups runs. While RuntimeHealth reports an error,
// nothing is dispatched and health is re-checked after a backoff of 100ms
// doubling to 5s; input keeps being queued and is dispatched in order once
// healthy.
//
// Sources: NewAPIServerSource (pods with spec.nodeName=<node>, client-go
// reflector), NewFileSource (a manifest directory), NewHTTPSource (a
// manifest URL). Static pods are defaulted and validated with k8s.io/api
// types, named <name>-<node>, get a UID hashed from content, source kind
// and node, and the config.hash annotation.
//
// # Host duties
//
//  1. Implement Handler (typically: pod manager + pod workers, mapped as
//     below).
//  2. Build the sources and a Loop with New; set RuntimeHealth (a PLEG's
//     Healthy fits as is), PodsToSync (podworkers' Workers.DuePods fits as
//     is), OnContainerDied and OnProbeResult (the status manager).
//  3. Give the loop's producers to the blocks that produce: Loop's
//     HandlePLEGEvent is a pleg Config.Sink and HandleProbeUpdate a prober
//     Config.Sink. Both never block and are safe from any goroutine, so the
//     host runs no forwarding goroutine.
//  4. Run it: go loop.Run(ctx). Report LastIteration on the health
//     endpoint and use SourcesReady where upstream does.
//
// Build in this order: the PLEG's cache, the pod workers, the loop, then
// the generator (with the cache and the loop's sink); only RuntimeHealth
// reaches the generator through a closure. Relist once before the loops
// start, so the runtime is healthy at once:
//
//	cache := pleg.NewCache()
//	workers, _ := podworkers.New(podworkers.Config{Syncer: s, StatusBarrier: cache.WaitNewerThan})
//	var gen *pleg.Generator
//	loop, _ := syncloop.New(syncloop.Config{Handler: h, Sources: srcs,
//		RuntimeHealth: func() error { return gen.Healthy() },
//		PodsToSync:    workers.DuePods})
//	gen, _ = pleg.New(pleg.Config{Runtime: rt, Cache: cache, Sink: loop.HandlePLEGEvent})
//	probes, _ := prober.New(prober.Config{Runner: rt, Sink: loop.HandleProbeUpdate})
//	_, _ = gen.Relist(ctx)
//
// # A Handler over podworkers
//
// Upstream's kubelet maps the loop's calls onto its pod manager (pods by UID
// and full name, mirror pods beside their static pods) and its pod workers
// like this; a host using this package with nodekit's podworkers does the
// same. A pod is a mirror pod when it carries ConfigMirrorAnnotationKey;
// mirror pods never get a worker of their own: each call below that meets
// one updates the pod manager and sends UpdateSync for its static pod (by
// full name), with Update.MirrorPod set, so the static pod's worker
// recreates or refreshes the mirror.
//
//   - HandlePodAdditions (ADD): record the pod; admit it (a rejected pod gets
//     a Failed status and no worker); then UpdatePod with UpdateCreate.
//   - HandlePodUpdates (UPDATE, DELETE): record the pod; UpdatePod with
//     UpdateUpdate. A DELETE is a pod with a deletion timestamp: the worker
//     sees it and terminates with the pod's grace period.
//   - HandlePodRemoves (REMOVE): forget the pod; UpdatePod with UpdateKill
//     (the worker stops it and reaches finished).
//   - HandlePodReconcile (RECONCILE, a status-only change): record the pod;
//     if it has readiness gates (whose conditions others write), resync it
//     with UpdateSync so Ready is recomputed; for a pod the API server shows
//     evicted, remove its dead containers.
//   - HandlePodSyncs (PLEG events, probe results, PodsToSync): UpdatePod with
//     UpdateSync for each pod, with the pod as the pod manager has it now.
//   - HandlePodCleanups (housekeeping): Workers.SyncKnownPods with the set of
//     desired UIDs (prober's CleanupPods takes the same
//     sets.Set[types.UID]); UpdateCreate for a desired pod the workers no
//     longer know (it restarts after being finished); UpdateKill with a
//     RuntimePod for runtime pods that have no config; remove orphaned
//     volumes, cgroups and mirror pods.
//
// The podhandler package is a complete Handler of this shape over
// podworkers, ready to use.
//
// # Testing
//
// Package synclooptest has a recording Handler and a Source a test pushes
// snapshots through; with a FakeClock, Iterate (or Run and NextWake)
// drives the loop without sleeps.
//
// # Differences from upstream (pkg/kubelet syncLoop and pkg/kubelet/config)
//
//   - While the runtime is unhealthy upstream stops reading every channel,
//     so config sources and probe workers block; here everything is queued
//     (config in order, PLEG and probes coalesced) and dispatched on
//     recovery. The loop monitor timestamp keeps advancing while the
//     runtime is unhealthy (the loop is alive); hosts report runtime health
//     separately.
//   - PLEG events and probe results dispatched in one pass sync each pod
//     once, in one HandlePodSyncs call. Coalescing probe results is safe
//     because the pod sync reads the current results.
//   - Without a Config.PodByUID, the loop resolves pods from its own index of
//     the non-mirror pods it dispatched.
//   - A manifest file that becomes invalid keeps its last valid pod (upstream
//     drops it at the next 20s re-list); an invalid item of a URL PodList
//     keeps its previous version while the others apply (upstream rejects
//     the list). Errors name the file or URL and the field, are logged and
//     recorded as a FailedValidation event on the Node.
//   - Static pod UIDs hash the JSON of the defaulted v1 pod with the source
//     kind and node name, not upstream's spew dump of the internal type with
//     the file path or URL: UIDs differ from upstream's (a migrated node
//     restarts its static pods once), and renaming a manifest keeps the pod.
//   - The file source polls the directory (stat every CheckPeriod, 1s; full
//     re-read every 20s) on the injected clock instead of using inotify:
//     no new dependency, deterministic tests, every OS; changes are seen
//     within a second instead of at once.
//   - Defaulting covers the v1 defaults a node agent relies on (restart and
//     DNS policy, grace period, scheduler name, service links, container
//     termination message, pull policy, ports, probes, volumes, requests
//     from limits), not all of SetObjectDefaults_Pod; validation covers the
//     essentials plus the API-object references static pods may not have,
//     not all of ValidatePodCreate.
//   - The API server source's client-go reflector gets Config.Clock for its
//     backoff, but watch timeouts inside client-go use real time.
//   - Node sync is not awaited before watching pods: the host starts Run
//     when it is ready to.
package syncloop
