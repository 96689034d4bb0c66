// Package podsyncer runs pods on a CRI runtime: a podworkers.Syncer that
// does the SyncPod half of the kubelet's kuberuntime manager. A host that
// drives pods with podworkers over CRI plugs a Syncer in and gets the
// kubelet's container behaviour without copying it.
//
// # Model
//
// Each SyncPod reads the pod's runtime state (from the PLEG cache the pod
// worker's barrier made fresh, or straight from the runtime), computes an
// action plan (package podplan: which sandbox to create, which containers to
// kill and start, init containers in order, sidecars, restart policy, probe
// failures, spec changes, in-place resize), and carries it out:
//
//   - the pod cgroup (Config.Cgroups) and the volumes (Config.Volumes) first,
//     on every sync that still runs something, so that configMap, secret and
//     token contents follow their sources;
//   - the sandbox with the kubelet's hostname, DNS config, port mappings,
//     sysctls, security context and RuntimeClass handler;
//   - images pulled as their pull policy says with the pod's pull secrets
//     (ImagePuller; ErrImagePull, ImagePullBackOff, ErrImageNeverPull);
//   - each container with its environment (podenv), mounts, managed
//     /etc/hosts, termination-message file, security context (seccomp,
//     AppArmor, capabilities, masked paths, runAsNonRoot against the image),
//     resources (pod-level limits standing in for those a container does
//     not set) and OOM score adjustment; postStart and preStop hooks (exec,
//     HTTP, sleep); ephemeral containers with a target's PID namespace;
//   - CrashLoopBackOff as the kubelet's (10s doubling to 5m, keyed by pod,
//     container and spec hash, counted from the last exit), activeDeadline
//     seconds, kills with the probe's or the pod's grace period.
//
// A container whose exit code matches a RestartAllContainers restart rule
// resets its pod in place: every container is removed (running ones
// stopped without grace) and the pod starts over from its first init
// container in the same sandbox, restart counts and last terminations
// carried in the status, the AllContainersRestarting condition True
// meanwhile (podplan.Plan.Reset).
//
// An in-place resize (container or pod-level resources, running init
// containers included) is allocated through Config.Allocation and actuated
// with the pod cgroup widened first and narrowed last, each container
// updated or restarted as its resize policy says.
//
// After each pass the pod's status is built from the runtime state (phase,
// conditions, container states with the kubelet's reasons, restart counts,
// last termination states, termination messages capped at 12 KiB per pod)
// and set on the podstatus.Manager, which writes it.
// Config.InitContainers learns when regular init containers start and
// end, for the pod startup SLI (podstartup).
// SyncTerminatingPod stops the pod's liveness and startup probes, then
// every container (preStop hooks, sidecars after the app containers), and
// SyncTerminatedPod removes the sandboxes of a pod
// being deleted and tears its volumes down.
//
// # Host duties
//
// The host builds the CRI clients, a StatusManager (podstatus.Manager,
// run by the host), a
// volume manager (volumes.Manager or its own Volumes), usually a PLEG
// (States) and a prober (Probes; *prober.Manager implements it), and hands
// the Syncer to podworkers. It keeps the node facts (Node), services,
// configMaps and secrets (Objects) and RuntimeClass lookup. Admission, the
// sync loop, mirror pods, housekeeping of orphaned sandboxes and container
// garbage collection are the host's (see syncloop, admission, containergc).
//
// Imports: podworkers (the Syncer contract), pleg (the runtime state type
// it reads), podstatus (the status rules it shares with the status
// manager), cgroups and allocation (their value types and helpers; the
// managers themselves come through the Cgroups and Allocation
// interfaces), podenv, kubetypes and clockctx (leaves); never another
// block's internals.
//
// # Differences from upstream
//
//   - The container hash that decides a restart covers image, command,
//     args, env and ports, as JSON, not upstream's hash of the whole spec;
//     it is stored in the same annotation (io.kubernetes.container.hash) but
//     is not comparable with a kubelet's, so containers started by a kubelet
//     are restarted once when this syncer takes a node over.
//   - A pod with hostUsers: false gets the user namespace
//     Config.UserNamespaces gives it (the userns block) on its sandbox and
//     every container, their mounts idmapped, as the kubelet; the host's
//     pods send no user namespace option (the kubelet sends mode NODE,
//     which runtimes treat alike). Without Config.UserNamespaces such a pod
//     is refused loudly (FailedCreatePodSandBox) rather than run in the
//     host's.
//   - kubelet_pod_start_duration_seconds is observed where the kubelet
//     observes it (a pod's first status, and Pending to Running), from the
//     pod's config.seen annotation; a pod without one is not observed (the
//     kubelet would record the time since the zero time).
//   - Recursive read-only mounts follow the kubelet's rule against the
//     runtime handler's feature (Config.RecursiveReadOnlyMounts), and every
//     container status lists its volumeMounts (readOnly, recursiveReadOnly)
//     as the kubelet writes them; they are computed from the spec on every
//     status rather than kept from the first one the kubelet wrote.
//   - Pod IPs are the newest ready sandbox's, one per family in the node's
//     family order; once no sandbox is ready, the last known ones stay
//     (from the PLEG cache, else from the pod's status across an agent
//     restart), so a completed pod keeps its podIP as on the kubelet.
//   - There is no device manager: extended resources from device plugins
//     are not allocated to containers.
//   - A pod's status.resources is what the agent last set its cgroup to, not
//     read back from the cgroup as the kubelet does (so without its rounding,
//     and without the "unlimited" 9007199254740988Ki memory limit the
//     kubelet shows on cgroup v1 for a pod without one, once a sync ran
//     while the pod was Running).
//   - The status is set at the end of each pass, from the runtime state the
//     pass left; the kubelet writes it at the start of a sync, from the
//     previous sync's outcome. So a container met by its crash-loop back-off
//     is written as waiting CrashLoopBackOff (its exit as lastState) by the
//     same pass, where the kubelet shows the exit itself until its next
//     sync (for a back-off under a minute, through most of it); and a
//     container just started is written running at once. The fields are the
//     kubelet's either way: test/integration's TestPodStatusesMatchKubelet
//     compares every status field of eleven pods with the kubelet's capture
//     (conformance/statuses.sh).
package podsyncer
