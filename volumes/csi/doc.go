// Package csi mounts CSI volumes on a node as the kubelet does: it keeps
// the registry of the node's CSI drivers and is the volumes.Plugin of
// inline csi volumes and of PersistentVolumes with a csi source.
//
// # Model
//
// Drivers is the registry: a pluginwatch.Handler for plugins of type
// "CSIPlugin" (a driver's node-driver-registrar puts its socket in the
// kubelet's plugins_registry directory). Registering a driver calls its
// NodeGetInfo and publishes the answer as upstream does: the driver's
// entry in the node's CSINode object (node ID, topology keys, the volume
// limit as its allocatable count; the object is created owned by the Node
// if missing), the node's csi.volume.kubernetes.io/nodeid annotation and
// its topology labels. Deregistering removes the CSINode entry and the
// annotation.
//
// Registrations are checked, since anything that can put a socket in the
// registration directory can register a driver. ValidatePlugin and
// RegisterPlugin refuse:
//
//   - a driver name that is not a DNS-1123 subdomain of at most 63
//     characters (upstream's rule for CSIDriver names;
//     ErrInvalidDriverName): the name goes into paths on the node;
//   - an endpoint that is not a Unix socket: an absolute path, or one
//     after unix:// or unix: (ErrInvalidEndpoint). The driver is dialled
//     on that socket and nothing else, since its calls carry secrets and
//     service account tokens;
//   - a name registered from another socket, unless the newcomer offers
//     a higher CSI version (ErrAlreadyRegistered); from the same socket a
//     registration always replaces the previous one;
//   - a topology label that would change a label the Node has
//     (ErrTopologyCollision, upstream's message "detected topology value
//     collision: driver reported ..."): the Node's labels (its hostname
//     and zone drive scheduling and local volumes' affinity) are not a
//     driver's to rewrite. Nothing is written then: not the Node, not the
//     CSINode, and the driver is not registered.
//
// A vol_data.json is read from the node's disk, not necessarily written
// by this agent: one that does not name a valid driver and a volume
// handle is refused (ErrInvalidVolData) and nothing is done for it. Every
// path built from a driver name or a volume handle, and each volume
// directory given, is checked to lie under the root directory
// (ErrUnsafePath).
//
// Plugin sets a volume up through its driver's node service, with the
// kubelet's paths, so tools that inspect a node find what they expect:
//
//   - an inline (ephemeral) volume, whose CSIDriver must list the
//     Ephemeral lifecycle mode, is published at
//     <root>/pods/<uid>/volumes/kubernetes.io~csi/<name>/mount with the
//     handle csi-<sha256(pod UID, name)>;
//   - a persistent volume (the claim resolved, and its node affinity
//     checked against the node's labels, by the volumes.Manager) of a
//     driver that attaches (its CSIDriver does not say attachRequired:
//     false) is first checked attached: listed in the node status's
//     volumesAttached by the attach/detach controller, and its
//     VolumeAttachment attached (whose metadata is the publish context).
//     A driver that stages gets NodeStageVolume
//     once per node at <root>/plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount,
//     then NodePublishVolume per pod.
//
// The request carries what upstream's does: the volume attributes, the
// pod's facts with podInfoOnMount, service account tokens the CSIDriver
// requests, the publish and stage secrets, the access mode, fsType and
// mount options; the pod's fsGroup is passed to a driver with
// VOLUME_MOUNT_GROUP and applied by the plugin otherwise, as the
// CSIDriver's fsGroupPolicy says. Each published volume has a
// vol_data.json beside it (the kubelet's keys), so TearDown, called by the
// volumes.Manager for each CSI volume of a pod it tears down, works from
// disk after an agent restart: NodeUnpublishVolume, the directory removed,
// and NodeUnstageVolume when no pod directory on the node refers to the
// volume any more. CleanupStaged unstages what an agent stopped between a
// stage and a publish left. InUse is the node status's volumesInUse.
//
// Every call to a driver is bounded by Config.Timeout (2 min, the
// kubelet's) on Config.Clock. A failure is a FailedMount the volume
// manager retries with back-off; a driver not registered (yet, or any
// more) fails a setup and holds a teardown until it is. Only the pods
// using a hung or failing driver are affected.
//
// # Host duties
//
//  1. drivers, _ := csi.NewDrivers(csi.DriversConfig{Client: nodeClient, NodeName: node})
//  2. plugin, _ := csi.New(csi.Config{RootDir: root, NodeName: node, Drivers: drivers, Client: nodeClient})
//     and pass it in volumes.Config.Plugins.
//  3. Register drivers from the registration directory:
//     pluginwatch.New(pluginwatch.Config{Dir: root + "/plugins_registry",
//     Handlers: map[string]pluginwatch.Handler{"CSIPlugin": drivers}}), and Run it.
//  4. After the Node is registered, drivers.InitCSINode(ctx).
//  5. Report plugin.InUse in node status (nodestatus.VolumesInUse), and
//     register the node with volumes.kubernetes.io/controller-managed-attach-detach
//     so the attach/detach controller reports volumesAttached.
//  6. In housekeeping, after orphaned pods' volumes, plugin.CleanupStaged(ctx).
//
// # Differences from upstream (pkg/volume/csi)
//
// Filesystem volumes only: volumeMode Block is refused before the plugin
// (by the volumes.Manager). A volume is not marked in use in node status
// before it is mounted (the kubelet waits for its in-use report first);
// the attach/detach controller's volumesAttached is read from the API
// server rather than from a node informer. requiresRepublish is not
// honoured (a volume is published once per pod), volume stats
// (NodeGetVolumeStats: volumes.Manager.Usage reads the statfs figures of
// the publish path instead), expansion (NodeExpandVolume) and SELinux mount
// contexts are not implemented, nor in-tree plugin migration (the CSINode
// has no migrated-plugins annotation). A restarted agent stages again a
// volume already staged (NodeStageVolume is idempotent by the spec).
// Upstream refuses a driver name already registered unless the newcomer's
// version is higher, whatever its socket; here a registration from the
// same socket is accepted too (a driver that restarted). A registration
// refused before any write (a topology collision, a failed NodeGetInfo)
// leaves the Node and CSINode as they were; one whose CSINode write fails
// after the Node's leaves the Node's new annotation and labels, and the
// next attempt writes both again (upstream uninstalls the name's node
// information on any failure).
package csi
