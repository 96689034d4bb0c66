// Package userns gives pods with spec.hostUsers: false a user namespace
// of their own (KEP-127, GA and locked on in Kubernetes v1.36): the
// kubelet's user namespace manager (pkg/kubelet/userns) as a block.
//
// # Model
//
// The node sets aside a range of host user and group IDs for pods
// (Config.Range, or KubeletMappings: the "kubelet" user's subordinate IDs
// in /etc/subuid and /etc/subgid, or every ID from 65536 up when there is
// no such user). The range is cut into slots of IDsPerPod IDs (65536). A
// pod with hostUsers: false gets one slot: container IDs 0..IDsPerPod-1,
// root included, are host IDs First..First+IDsPerPod-1, the same for
// users and groups, so root in the pod is an unprivileged user on the
// host and no two pods share an ID.
//
// A pod's slot is written to <pod dir>/userns (MappingsFile), in the
// kubelet's JSON, before it is handed out, and read back on every call,
// so it survives restarts and a node taken over from a kubelet keeps its
// pods' ranges. New records every such file it finds; Release (pod
// terminated) and CleanupOrphans (housekeeping) remove the file and free
// the slot. Slots are allocated next-fit: the first free one after the
// last allocated, wrapping around. One mutex serializes allocation, so
// PodUserNamespace, Release and CleanupOrphans may be called from any
// goroutine; the Manager starts none.
//
// # Host duties
//
//  1. Build the Manager at startup, before any pod is synced: New(Config{
//     RootDir: <kubelet root dir>, IDsPerPod: <userNamespaces.idsPerPod>,
//     MaxPods: <maxPods>}). The pod directories are the ones the volume
//     manager uses (<RootDir>/pods/<uid>).
//  2. Know each runtime handler's user namespace support: the
//     RuntimeHandlers of the CRI StatusResponse, features.user_namespaces
//     (HandlerSupportsUserNamespaces). Report it in the Node's
//     status.runtimeHandlers[].features.userNamespaces.
//  3. When building a pod's sandbox config, call PodUserNamespace(ctx,
//     pod, handler, supported) with the pod's runtime handler (its
//     RuntimeClass's, "" for none) and set the result as
//     PodSandboxConfig.Linux.SecurityContext.NamespaceOptions.UsernsOptions.
//     An error fails the sandbox creation, its text in the event
//     (FailedCreatePodSandBox "Failed to create pod sandbox: <err>").
//  4. For every container of the pod, call it again (same answer) and set
//     ContainerConfig.Linux.SecurityContext.NamespaceOptions.UsernsOptions
//     to the result, and MapMounts(ContainerConfig.Mounts, result) so the
//     runtime idmaps the container's mounts.
//  5. Call Release(ctx, uid) once a pod is terminated (the kubelet does it
//     in SyncTerminatedPod, after the pod's cgroup is removed).
//  6. Call CleanupOrphans(ctx, keep) in housekeeping, with keep true for
//     every pod the agent knows or the runtime runs (it fits
//     podhandler.Config.Orphans).
//
// Composition:
//
//	ns, err := userns.New(userns.Config{RootDir: "/var/lib/kubelet"})
//	...
//	// sandbox
//	supported, _ := userns.HandlerSupportsUserNamespaces(status.RuntimeHandlers, handler)
//	userNs, err := ns.PodUserNamespace(ctx, pod, handler, supported)
//	if err != nil {
//		return err // event FailedCreatePodSandBox "Failed to create pod sandbox: " + err
//	}
//	sandboxCfg.Linux.SecurityContext.NamespaceOptions.UsernsOptions = userNs
//	// each container
//	ctrCfg.Linux.SecurityContext.NamespaceOptions.UsernsOptions = userNs
//	userns.MapMounts(ctrCfg.Mounts, userNs)
//	// pod terminated
//	err = ns.Release(ctx, pod.UID)
//	// housekeeping
//	err = ns.CleanupOrphans(ctx, func(uid types.UID) bool { return known[uid] || running[uid] })
//
// # Differences from upstream
//
//   - No feature gate: the gate is locked on in v1.36, so a pod with
//     hostUsers unset or true always gets mode NODE, and the gate-off
//     paths (nil options, "feature gate disabled" errors) do not exist.
//     Windows' no-op manager has no counterpart: this is Linux behaviour.
//   - The host passes the runtime handler and its support instead of the
//     manager asking the kubelet. For a handler the runtime does not list,
//     the kubelet appends ": the handler %q is not known" to the message;
//     HandlerSupportsUserNamespaces returns that error for the host to log.
//   - Allocation is deterministic (next-fit) where the kubelet picks a
//     random free slot; a released range is reused as late as possible.
//   - PodUserNamespace repeats API validation's checks for hostUsers:
//     false (ValidatePod) for pod sources that skip it; the kubelet relies
//     on the API server and its static pod validation.
//   - KubeletMappings reads /etc/subuid and /etc/subgid itself instead of
//     running getsubids, so nsswitch subid plugins (remote sources) are
//     not consulted. A "kubelet" user without exactly one entry in both
//     files is an error (as when getsubids answers nothing); the kubelet
//     falls back to the default range only when getsubids is not
//     installed. The two ranges are compared by value, not by getsubids'
//     output text.
//   - A range that ends past the last 32-bit ID is refused: the kubelet
//     accepts one and would wrap host IDs around to root's.
//   - A mappings file that went missing while its pod holds a range is
//     written again with that range; the kubelet allocates a second range
//     and leaks the first.
//   - A range is freed only once its file is removed; the kubelet ignores
//     the removal error and frees it, so after a restart two pods' files
//     could claim one range and the kubelet would not start. Release and
//     CleanupOrphans return such errors.
//   - Reading a pod's mappings does not create its directory; writing
//     them does (0750, the kubelet's pod directory mode). A missing pods
//     directory means no pods, in CleanupOrphans too.
//   - A pod UID that is not a single path element is refused
//     (ErrInvalidUID) rather than joined into a path.
//   - CleanupOrphans takes a keep func (podhandler.OrphanCleaner) instead
//     of the desired and running pod lists.
//   - Errors the user sees keep the kubelet's text and match sentinels
//     (errors.Is); New logs nothing (it has no context) and returns every
//     problem.
package userns
