// Package prober runs liveness, readiness and startup probes (exec, HTTP GET,
// TCP socket and gRPC health) for the containers of a node's pods with the
// kubelet's semantics, and publishes their results without ever blocking a
// probe worker.
//
// # Model
//
// A [Manager] holds one probe per container and probe type (containers and
// sidecar init containers). A probe has no goroutine of its own: all probes
// wait in one heap ordered by their next run, [Manager.Run] sleeps on one
// timer of the injected clock until the earliest is due and hands due probes
// to a pool of Config.Workers goroutines (default 64). A new probe first runs
// at a random point of its first period, so probes added together spread
// over the period; it then runs once per period. [Manager.RunOnce] is the
// synchronous core under Run: it runs every due probe on the caller's
// goroutine.
//
// Each run follows upstream's worker: it looks up the container in the
// latest status given to [Manager.UpdatePodStatus]; on a new container ID it
// publishes the initial result (liveness Success, readiness Failure, startup
// Unknown) and resumes probing; it waits out initialDelaySeconds; startup
// gates liveness and readiness (they wait until the container is started,
// the startup probe stops once it is); a result is published after
// successThreshold / failureThreshold equal results in a row; after a
// liveness failure or any startup result the probe holds until the
// container ID changes. A non-running container fails, and its probes stop
// when it will not be restarted or the pod finished; liveness and startup
// report Success and stop once the pod is being deleted.
//
// Handlers: exec through a [CommandRunner] (cri-client's RuntimeService
// fits), output capped at 10 KiB; HTTP GET (host defaults to the pod IP,
// port by number or name, headers, no proxy, TLS not verified, same-host
// redirects only — a redirect elsewhere is a success with a ProbeWarning
// event —, at most 10 KiB of body read, 2xx/3xx succeed, User-Agent
// kube-probe/1.36); TCP connect; gRPC grpc.health.v1 Check. Every probe
// socket has SO_LINGER 0: it is reset on close and leaves no TIME-WAIT
// socket. Timeouts run on the injected clock.
//
// Results live in one cache per probe type ([Manager.Result]); each change
// goes to Config.Sink, or without one is delivered on [Manager.Updates].
// Publishing never blocks: a sink must not block, and while a channel's
// receiver lags, updates for the same container coalesce and the latest
// wins. Results and updates name containers by [containerid.ID]; the zero
// Result is Unknown.
//
// # The host's duties
//
//  1. Create the Manager with New (a Runner for exec probes, a Recorder for
//     events) and run Manager.Run in a goroutine for the agent's lifetime.
//  2. Call AddPod when a pod is admitted, RemovePod when it is gone,
//     StopLivenessAndStartup when it starts terminating, and CleanupPods
//     with the desired pods during housekeeping.
//  3. Whenever it computes a pod's API status (and at least whenever a
//     container starts, restarts or exits), call UpdatePodStatus: it sets
//     Started and Ready on the container statuses and is the probes' only
//     view of container IDs, states and start times. Give a pod's first
//     status right after AddPod: a liveness or startup probe that comes due
//     before it skips to its next period (readiness is triggered by the
//     status).
//  4. Route updates to the sync loop: Config.Sink = a syncloop Loop's
//     HandleProbeUpdate (no goroutine of yours), or select on
//     Updates(Liveness), Updates(Readiness) and Updates(Startup). The loop
//     restarts a container whose liveness or startup result is Failure
//     (with the probe's terminationGracePeriodSeconds when set), and
//     resyncs the pod on readiness changes.
//
// # Testing
//
// Package probertest has a scripted CommandRunner for exec probes and a
// Recorder to use as Config.Sink; with a FakeClock and RunOnce a test drives
// probes without goroutines or sleeps.
//
// # Differences from upstream
//
//   - No goroutine and ticker per probe: one scheduler, one timer, a
//     bounded pool. Probes that overran their period run once at once, then
//     keep the period from then on, like a ticker.
//   - Jitter: every new probe's first run is spread over its period, not
//     only during the first period after kubelet start; a readiness probe
//     triggered by UpdatePodStatus runs at once but keeps its periodic slot
//     (upstream restarts the period), so triggered probes do not stay
//     bunched.
//   - Updates never block and coalesce; upstream's 20-slot channel blocks
//     workers when the sync loop lags.
//   - TIME-WAIT: SO_LINGER 0 (reset) instead of upstream's 1 second linger,
//     which does not avoid TIME-WAIT on Linux (kubernetes#115143).
//   - HTTP is a minimal HTTP/1.1 client on one connection per request, no
//     HTTP/2; a body read error or a stalled body is a Failure (upstream
//     discards the result as an error). An empty host (no pod IP yet) is an
//     error, not a dial to localhost.
//   - gRPC: an unreachable target fails at once instead of being retried
//     until the timeout.
//   - Invalid probes (no handler, two handlers, bad port, negative values)
//     are reported by AddPod as ErrInvalidProbe errors, besides the
//     per-period "probe errored" event upstream emits.
//   - The result run (threshold counter) restarts with each new container
//     ID; upstream carries it over.
//   - Feature gates are fixed at their v1.36 defaults:
//     ChangeContainerStatusOnKubeletRestart off (containers that survived a
//     kubelet restart keep their readiness), ContainerRestartRules on.
//   - The pod's deletion is read from the pod given to UpdatePodStatus, not
//     from the copy given to AddPod.
package prober
