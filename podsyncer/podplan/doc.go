// Package podplan computes what a CRI pod syncer must do to bring a
// pod's runtime state to its spec, as the kubelet's computePodActions
// does: a pure function from (pod, what the runtime holds, probe results)
// to a Plan — create a sandbox or not, which containers to start and in
// which order, which to kill and why, whether the pod is finished. The
// agent's syncer executes a Plan step by step; all the decisions live
// here, under table tests, among them every row of the kubelet's own
// tables for computePodActions (upstream_rows_test.go).
//
// The rules, as upstream:
//
//   - A pod without a ready sandbox has its sandbox and containers killed
//     and a new sandbox created — unless it already ran containers and
//     nothing of it would run again: restartPolicy Never, or every app
//     container exited for good (an OnFailure pod whose containers all
//     succeeded). Then it is done.
//   - Init containers are walked from the last one back: the last one
//     with an instance tells how far initialization got (finished ones may
//     have been removed since), and of those before it only sidecars are
//     kept running. Init containers run one at a time, in order; a failed
//     one is restarted unless its restart policy (or the pod's) says
//     Never, which fails the pod. One in an unknown state counts as
//     failed, and is killed before it restarts.
//   - Restartable init containers (sidecars, restartPolicy Always) start
//     in order among them; the next init container waits until a sidecar
//     has started (running, and its startup probe passed), and so do the
//     app containers while the last init container is a sidecar that has
//     not. A sidecar is restarted whenever it is not running (killed first
//     when its state is unknown), regardless of the pod's restart policy,
//     and when its startup or liveness probe failed or its spec changed.
//   - App containers start once initialization is done; an exited one is
//     restarted as its restart rules and policy (or the pod's) say; one
//     whose start failed, or whose state is unknown (killed first), is
//     restarted whatever the policy; a running one whose spec hash
//     changed, whose liveness or startup probe failed or whose resize
//     needs it is killed and (unless the policy is Never, a spec change
//     or a resize excepted) started again. An app container with no
//     instance in the current sandbox is judged by its newest instance in
//     an earlier one: one that exited for good is not run again.
//   - Ephemeral containers are started once, in any sandbox, and never
//     restarted.
//   - A container whose exit code matches one of its restart rules with
//     the action RestartAllContainers resets the pod in place: every
//     instance of every init and regular container is removed (running
//     ones stopped without grace), regular containers first and the
//     instances that triggered it last, and the pod starts over from
//     its first init container in the same sandbox.
//   - A pod whose restart policy is not Always is done when every app
//     container has exited for good, or when an init container failed
//     with no restart left; sidecars do not keep it alive.
//
// # Host duties
//
//  1. Fill Input from the runtime: the newest instance per container in
//     the newest sandbox (Containers), the older ones newest first
//     (Earlier), the prober's results, and whether the newest sandbox can
//     be used as it is (SandboxReady).
//  2. Carry the Plan out in its order; after creating a sandbox, read the
//     runtime again and compute the next Plan, which starts the
//     containers in it.
//  3. Once a Plan is Done, terminate what still runs of the pod.
//
// # Differences from upstream
//
// On every row of the kubelet's tables (TestComputePodActions and its
// WithInitContainers, WithRestartableInitContainers and
// WithInitAndEphemeralContainers variants) a Plan decides as upstream.
// What reads differently:
//
//   - A Plan that creates a sandbox starts nothing; the next Plan,
//     computed in the new sandbox, starts what upstream's podActions list
//     with it (the rows check both). KillPod is false for a pod that
//     never had a sandbox (upstream sets it, with nothing to kill), and
//     upstream's KillPod without a new sandbox is a Done Plan.
//   - Whether the sandbox needs replacing is the caller's: SandboxReady
//     stands for upstream's podSandboxChanged (newest sandbox ready, no
//     other ready one, network namespace unchanged, an IP unless host
//     network), and Attempt counts the pod's sandboxes where upstream
//     adds one to the newest sandbox's attempt. The row "Kill pod and
//     recreate all containers if the PodSandbox does not have an IP" is
//     expressed with SandboxReady false.
//   - Resource updates of an in-place resize (upstream's
//     ContainersToUpdate and pod-level updates) are the caller's; Input
//     only tells that a resize needs a restart (ResizeRestart). The rows
//     "resize of a running non-sidecar init container" (with and without
//     the feature gate) are expressed for their kills and starts only.
//   - Init and sidecar containers are judged in the newest sandbox only
//     (upstream purges them when it creates a sandbox), and an app
//     container in any state there, not only created or running, shows
//     the pod initialized (upstream cannot tell sandboxes apart).
//   - Whether a container runs again in a new sandbox follows its restart
//     rules and policy on its last exit, as everywhere else; upstream's
//     sandbox path skips only containers that succeeded under OnFailure,
//     so it re-runs one whose own restartPolicy is Never. No row has one.
//   - A running container killed without restart (a failed probe under
//     Never) keeps the pod going until it has exited; upstream kills the
//     whole pod in the same pass when nothing else runs or starts. A
//     sidecar whose liveness probe has not run yet may still be restarted
//     for a resize. No row has either.
//   - An init container that exited 0 but was OOM-killed counts as
//     succeeded (Input has no exit reason); a pod marked for deletion is
//     planned like any other, since the caller terminates such pods
//     rather than syncing them. No row has either.
//   - A RestartAllContainers reset is detected from the exit codes in
//     Input, not passed in as upstream's restartAllContainers argument.
package podplan
