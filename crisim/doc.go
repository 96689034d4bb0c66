// Package crisim is an in-memory container runtime that speaks the real
// Kubernetes CRI (runtime.v1) over gRPC on a unix socket.
//
// It exists so that tests of nodekit components can talk to "a container
// runtime" through the very client the kubelet uses (k8s.io/cri-client)
// without root, containerd or CRI-O. Nothing is executed: sandboxes,
// containers and images are records in memory whose state machine mirrors
// what real runtimes do.
//
// # Model
//
// A [Sim] owns all state behind a single mutex. Pod sandboxes are READY
// after RunPodSandbox and NOTREADY after StopPodSandbox, which force-kills
// (exit code 137) every running container of the pod. RemovePodSandbox
// removes the pod and all its containers. Containers go CREATED → RUNNING →
// EXITED; a running container that is removed is force-stopped first, and
// stopping a container that is not running is a no-op. Unknown IDs yield
// gRPC codes.NotFound, except for the Remove calls which the CRI defines as
// idempotent. Creating a container requires its image to be present (see
// [Config.Images] and PullImage).
//
// What a container "does" once started is decided by a [Script] selected
// with a [Match] on container name, pod name and namespace; by default it
// runs forever. Scripts can exit after a delay, fail to start, or take time
// to react to StopContainer. What it prints is scripted the same way with
// [Sim.ScriptLogs] and [Sim.ScriptLogLines] (or printed later with
// [Sim.AppendLog]), ExecSync and Exec answers with [Sim.ScriptExec], port
// forwarding targets with [Sim.ScriptPortForward], and resource usage is set
// with [Sim.SetContainerStats], [Sim.SetPodSandboxStats] and
// [Sim.SetImageFsUsage]. A host may also script containers from their pod's
// annotations ([AnnotationScriptPrefix], [AnnotationLogsPrefix]) by calling
// [Sim.ScriptFromPod] before creating each container (podsyncer's
// Config.BeforeCreate), as the reference agent does in simulator mode.
//
// # Logs
//
// As real runtimes do, a container's ContainerStatus.LogPath is the
// sandbox's PodSandboxConfig.LogDirectory joined with the container's
// ContainerConfig.LogPath (the LogPath alone without a LogDirectory). When
// the container starts, the simulator creates that file (and its
// directory) and writes the scripted lines to it in the CRI log format the
// kubelet reads, one full line ("F") per entry, stamped with the start time
// on the injected clock:
//
//	2026-03-01T12:00:01.000000000Z stdout F hello
//	2026-03-01T12:00:01.000000000Z stderr F oops
//
// AppendLog appends more lines, stamped with the clock's current time.
// Each write opens the file in append mode, so rotation by the host works.
// Relative paths are not written, and a log that cannot be written (say,
// a LogDirectory on a read-only file system or under a regular file) is
// silently skipped: the container runs as usual.
//
// # Streaming
//
// Exec, Attach and PortForward return URLs on an HTTP server from
// k8s.io/cri-streaming, the one containerd and CRI-O embed, listening on
// [Config.StreamingAddr] (a free loopback port by default). It starts with
// the first of these RPCs and stops with the stop function of
// [Sim.ListenAndServe], which closes open sessions and waits for them.
// The RPCs fail with NotFound for unknown IDs and FailedPrecondition for a
// container that does not run or a sandbox that is not ready. Sessions
// play scripts; nothing is executed:
//
//   - Exec plays the command's [ExecResult] as ExecSync does: it waits for
//     Delay on the injected clock, copies stdin to stdout if EchoStdin (an
//     unscripted `cat` does) until the client closes stdin, writes Stdout
//     and Stderr (both to stdout with a TTY) and ends with the exit code,
//     which clients such as client-go's remotecommand report as an exit
//     error.
//   - Attach writes what the container has printed since it started and
//     then what it prints, until the container exits (the session then
//     succeeds), the client closes stdin (what it sends is discarded) or
//     the server stops. A client that disconnects is noticed through stdin
//     if it attached one, otherwise at the next line written.
//   - PortForward connects each forwarded port to the TCP address
//     scripted with [Sim.ScriptPortForward] (typically a listener of the
//     test) and copies both ways until the target closes the connection;
//     a port without a target fails, the client getting the error on the
//     port's error stream.
//
// # Time
//
// Every timestamp (in nanoseconds, as the CRI wants) and every timer comes
// from [Config.Clock]. With a k8s.io/utils/clock/testing.FakeClock a test
// makes containers exit, stop timeouts expire, exec delays elapse and
// injected latency end by stepping the clock; FakeClock.HasWaiters tells it
// when the simulator is waiting. Timer callbacks hop to a fresh goroutine
// before touching the simulator, so state changes caused by a Step become
// visible shortly after Step returns, not during it. Timestamps of timed
// exits are the scheduled instant, not the instant the clock was stepped to.
//
// # Events
//
// GetContainerEvents streams CONTAINER_CREATED/STARTED/STOPPED/DELETED
// events. As containerd does, pod sandboxes produce events too, carrying the
// sandbox ID as container ID: CREATED and STARTED on RunPodSandbox, STOPPED
// on StopPodSandbox and DELETED on RemovePodSandbox. Each event carries the
// sandbox status and the statuses of the sandbox's containers as they are
// right after the change. Each subscriber has a bounded buffer
// ([Config.EventBuffer]); the runtime never waits for a subscriber. A
// subscriber whose buffer overflows is dropped: its stream ends with
// codes.ResourceExhausted and the client is expected to reconnect and
// relist. The server sends response headers once the subscription is
// registered, so a client that has received them (ClientStream.Header) will
// see every later event.
//
// # Faults
//
// [Sim.Inject] makes any RPC, named as in the CRI service ("RunPodSandbox",
// "ListContainers", "PullImage", ...), wait for a latency on the injected
// clock and/or fail, for a number of calls or until [Sim.ClearFaults]. Faults
// are applied by gRPC interceptors, so they cover unary and streaming RPCs
// uniformly; [Sim.Calls] counts the calls each method received.
//
// # Unimplemented RPCs
//
// RPCs that only make sense with real processes or metrics are left to the
// embedded Unimplemented servers and answer codes.Unimplemented:
// CheckpointContainer, and the metrics RPCs ListMetricDescriptors,
// ListPodSandboxMetrics and StreamPodSandboxMetrics. Everything else,
// including the streaming list RPCs (StreamPodSandboxes, StreamContainers,
// StreamImages, StreamContainerStats, StreamPodSandboxStats) and the
// streaming endpoints (Exec, Attach, PortForward, see above), is
// implemented.
//
// # Serving
//
// [Sim.ListenAndServe] serves on a unix socket and returns the endpoint
// ("unix://" + path) to give to cri-client, plus a stop function that ends
// event streams, pending waits and streaming sessions, then stops the
// server gracefully (falling back to a hard stop) and leaves no goroutine
// behind. [Start] wraps this for
// tests.
package crisim
