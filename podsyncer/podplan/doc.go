// Package podplan computes what a CRI pod syncer must do to bring a
// pod's runtime state to its spec, as the kubelet's computePodActions
// does: a pure function from (pod, what the runtime holds, probe results)
// to a Plan — create a sandbox or not, which containers to start and in
// which order, which to kill and why, whether the pod is finished. The
// agent's syncer executes a Plan step by step; all the decisions live
// here, under table tests.
//
// The rules, as upstream:
//
//   - Init containers run one at a time, in order; a failed one is
//     restarted unless the pod's restartPolicy is Never, which fails the
//     pod.
//   - Restartable init containers (sidecars, restartPolicy Always) are
//     started in order among them; the next init container waits until a
//     sidecar has started (running, and its startup probe passed). A
//     sidecar is restarted whenever it exits, regardless of the pod's
//     restart policy, and does not hold back app containers once started.
//   - App containers start once initialization is done; an exited one is
//     restarted as the restart policy says; a running one whose spec hash
//     changed, or whose liveness or startup probe failed, is killed and
//     (unless the policy is Never) started again.
//   - Ephemeral containers are started once and never restarted.
//   - A container whose exit code matches one of its restart rules with
//     the action RestartAllContainers resets the pod in place: every
//     instance of every init and regular container is removed (running
//     ones stopped without grace), regular containers first and the
//     instances that triggered it last, and the pod starts over from
//     its first init container in the same sandbox.
//   - A pod whose restart policy is not Always is done when every app
//     container has exited for good, or when an init container failed
//     with restartPolicy Never; sidecars do not keep it alive.
package podplan
