// Package simulated is a virtualnode.Provider whose pods exist only in
// memory, on an injected clock: the simulator behind examples/virtualnodes,
// scale benchmarks and tests of code built on package virtualnode (a
// KWOK-style stand-in for a real backend).
//
// # Model
//
//   - CreatePod hands the pod an IP from Config.PodCIDR (in order) and
//     makes its containers run and be ready after Config.ReadyDelay (init
//     containers complete at once); NotifyPods learns of every change. A
//     pod whose status says it runs (another replica ran it: a shard taken
//     over) is adopted as it is, with its IP and start time.
//   - Annotations script a pod: AnnotationExitAfter and AnnotationExitCode
//     make its containers exit, AnnotationStopAfter sets how long they take
//     to stop after SIGTERM, AnnotationLog sets their log lines.
//   - DeletePod waits on the clock for the containers to stop, at most the
//     grace period (then they report exit code 137).
//   - Logs are deterministic (ContainerLogs); Exec runs a few built-in
//     commands (echo, hostname, env, cat, true, false); attach and
//     port-forward are refused.
//
// Nothing here imports package virtualnode: the Provider type satisfies
// its interfaces (Provider, PodNotifier, LogProvider, ExecProvider)
// structurally.
package simulated
