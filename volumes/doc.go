// Package volumes is a node agent's volume manager, after the kubelet's:
// it puts the volumes of a pod on the host before its containers start,
// keeps their contents current while the pod runs, and removes every trace
// of them after it ends.
//
// The syncer calls three methods:
//
//   - SetUpPod before creating the sandbox, and again on every sync: it
//     makes each volume ready, rewrites configMap, secret, downward API and
//     token files whose source changed (atomically: a reader sees the old
//     set or the new one), and reports a FailedMount event with the
//     kubelet's message for each volume it cannot provide. A pod whose
//     volumes fail never starts. As on the kubelet, a volume no container
//     mounts or maps is not set up, and a ReadWriteOncePod volume another
//     pod on the node mounted is refused.
//   - ContainerMounts when creating a container: the CRI mounts of its
//     volumeMounts, with subPath and subPathExpr resolved safely (created
//     if missing, symlinks that leave the volume refused, the result pinned
//     with a bind mount).
//   - TearDownPod once the pod has terminated: tmpfs and subPath mounts
//     unmounted, the pod directory removed; idempotent, so a teardown cut
//     short by an agent restart finishes later. CleanupOrphans does the
//     same for pod directories nobody knows any more.
//
// Each volume type is a Plugin, one file each: emptyDir (disk, or tmpfs
// sized like the kubelet's), hostPath (every type check), configMap,
// secret, downwardAPI, projected (configMap, secret, downwardAPI and
// serviceAccountToken), and image volumes when Config.Images is set
// (pulled by the caller, mounted read-only by the runtime through the CRI
// mount's image field). A host adds its own types in Config.Plugins
// (consulted first, so one may also replace a built-in type): SetUp returns
// how containers mount the volume, and a plugin that mounts filesystems in
// its directories says so (MountOwner) for TearDownPod to unmount them.
// persistentVolumeClaim and generic ephemeral volumes are read as the node
// identity (the Node authorizer grants a node the claims of its pods and
// their volumes), with the kubelet's checks and messages (not bound, being
// deleted, a volume bound to another claim, an ephemeral claim the pod
// does not own), resolved once per pod. Every PersistentVolume with
// required node affinity, whatever its source (hostPath, local, csi or a
// host plugin's), is checked against the node's labels (Config.Node)
// before anything is mounted, and refused with the kubelet's message
// (MountVolume.NodeAffinity check failed for volume "<pv>" : no
// matching NodeSelectorTerms) if they do not match, or if the node is
// not known (ErrNodeUnknown): the affinity is never skipped. hostPath
// and local PersistentVolumes are then mounted from the node's path (a
// local one with the pod's fsGroup applied), and the pod's readOnly
// honoured. volumeMode Block and
// PersistentVolumes of any other source are refused by name unless a
// plugin mounts them (csi). A source no plugin supports (the network
// filesystems without a host plugin; clusterTrustBundle and
// podCertificate projections) fails to mount with a message that says
// so.
//
// Usage measures a pod's volumes, served for a minute (the kubelet's
// volume stats period): the volume stats of a node's stats summary (and so
// the kubelet_volume_stats_* families stats.Collector serves), and what the
// eviction manager enforces emptyDir sizeLimit and ephemeral-storage
// limits against. The volumes in the pod's directory are measured by a du
// walk within each volume's filesystem, with that filesystem's statfs
// figures, as the kubelet's MetricsDu; the persistent volumes
// (persistentVolumeClaim and generic ephemeral volumes) by the statfs
// figures of the filesystem at their mount (a local volume's path, a CSI
// volume's publish path, a host plugin's mount), as the kubelet's
// MetricsStatFS, with their claim. hostPath volumes, inline or
// PersistentVolumes, have no statistics, as on the kubelet.
//
// The files are laid out as on the kubelet
// (<root>/pods/<uid>/volumes/kubernetes.io~<plugin>/<name>), with its
// modes, fsGroup ownership and token file rules, so tools that inspect a
// node find what they expect.
//
// configMaps and secrets come from an Objects reader (an
// objects.Cache: one watch per referenced object, as the node identity).
// Service account tokens come from TokenRequest, bound to the pod, and are
// refreshed after 80% of their lifetime or a day.
//
// # Host duties
//
// The host (podsyncer) calls SetUpPod, ContainerMounts and TearDownPod as
// above, CleanupOrphans in housekeeping (podhandler's OrphanCleaner), and
// gives Objects, a Client acting as the node and an image source
// (podsyncer's ImagePuller) for the types that need them.
//
// Volume types beyond these plug in through small interfaces a Plugin may
// also implement: PersistentPlugin (the Manager resolves the claim and
// hands over the bound PersistentVolume: volumes/csi mounts CSI
// PersistentVolumes so), TearDowner (a teardown through a driver, from
// what is on disk, before the pod directory goes), InUseReporter (the
// volumes attachable or device-mounted, for InUse, the node status's
// volumesInUse, which also lists the local PersistentVolumes mounted).
// SetOwnership applies a pod's fsGroup (FSGroup; with its
// fsGroupChangePolicy) for such a plugin.
//
// # Metrics
//
// With Config.Registerer set, the Manager registers the kubelet's
// families under upstream's names, help, labels and buckets:
//
//   - volume_manager_total_volumes{plugin_name,state}, counted when
//     scraped: desired_state_of_world is every volume a plugin took of the
//     pods set up and not torn down (a claim once it is bound),
//     actual_state_of_world those of them set up at least once.
//   - storage_operation_duration_seconds{volume_plugin,operation_name,
//     status,migrated}: volume_mount for each setup of a volume until it
//     is mounted, and on every sync for configMap, secret, downwardAPI and
//     projected volumes (the kubelet's remounts); volume_unmount for each
//     volume a TearDowner tears down. status is success or fail-unknown,
//     migrated always false.
//   - kubelet_orphan_pod_cleaned_volumes and
//     kubelet_orphan_pod_cleaned_volumes_errors: the orphaned pod
//     directories CleanupOrphans found in its last sweep, and those it
//     could not remove.
//
// plugin_name and volume_plugin are the kubelet's plugin names
// (kubernetes.io/configmap, kubernetes.io/host-path,
// kubernetes.io/local-volume, kubernetes.io/csi:<driver>; a claim takes
// its PersistentVolume's). A registry that has them already is refused by
// New.
//
// # Differences from upstream
//
// There is no in-tree attach/detach or device mount stage: the built-in
// types are node-local, and CSI volumes (volumes/csi) are staged and
// published by their driver. A local PersistentVolume is bound from its
// path directly rather than through a bind mount under the pod's
// directory, and its fsGroup is applied on the pod's first setup only.
// The pv.beta.kubernetes.io/gid annotation does not add a supplemental
// group. A host plugin may add remote types. A PersistentVolume's node
// affinity term on a node field (matchFields metadata.name) is matched
// against the node's name; upstream matches a Node with the labels and
// no name, so such a term selects no node there (the scheduler's does). Upstream fails the mount of every
// PersistentVolume while the kubelet cannot read its Node; here only
// those with node affinity wait for it. A FailedMount of another kind names the pod's
// volume, not the PersistentVolume as upstream. A pod's volumes stay in
// the desired state of the metrics until its teardown (upstream drops them
// once the pod is terminated); volumes removed with their pod's directory
// are not timed one by one (no volume_unmount for them); a claim's first
// volume_mount includes reading the claim and its volume.
//
// Usage measures in the caller's goroutine when its last measurement is
// older than the period (the kubelet: a goroutine per pod, on its own
// jittered period), so the first caller after the period waits for the du
// walks; a persistent volume's statfs is waited for at most UsageTimeout
// (5s), after which that volume is left out until the pending call
// returns (the kubelet's statfs has no bound, but runs in the
// background). A CSI volume is measured by statfs of its publish path,
// not through its driver's NodeGetVolumeStats: every driver's volumes are
// reported (upstream: only those of drivers with GET_VOLUME_STATS), with
// the figures the mounted filesystem gives rather than the driver's, and
// without the volume's health (VOLUME_CONDITION), so there is no
// VolumeConditionAbnormal event. Usage is of the volumes set up since the
// Manager started.
package volumes
