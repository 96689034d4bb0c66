// Package cgroups keeps the node's pod cgroup tree as the kubelet does
// with --cgroups-per-qos: a kubepods cgroup under the cgroup root that
// holds every pod (and, with node allocatable enforcement, caps them all at
// the node's allocatable CPU shares, memory, PIDs and huge pages); below it
// burstable and besteffort QoS cgroups (Guaranteed pods sit directly in
// kubepods); and one pod<uid> cgroup per pod, sized from the pod's summed
// requests and limits (pod overhead and pod-level resources included), that
// the runtime is given as the sandbox's CgroupParent.
//
// Both cgroup v1 (one hierarchy per controller) and the unified v2
// hierarchy are handled, with either driver. With the cgroupfs driver the
// Manager makes the directories and writes the files. With the systemd
// driver (kubeadm's default) the tree is systemd slices named as the
// kubelet names them (kubepods.slice/kubepods-burstable.slice/
// kubepods-burstable-pod<uid with _ for ->.slice), started through
// systemd's D-Bus API (github.com/coreos/go-systemd/v22/dbus) as transient
// units that carry the resources as unit properties (CPUShares or
// CPUWeight, MemoryLimit or MemoryMax, CPUQuotaPerSecUSec, TasksMax), so
// that systemd keeps them; the files are written as well, and the
// hierarchies systemd does not manage (v1 cpuset, hugetlb) are made
// directly. Destroy stops a pod's slice. The runtime must use the same
// driver (containerd's SystemdCgroup); CheckHost refuses swap and cgroup
// v1 where the host asks for it.
//
// # Differences from upstream
//
//   - The kubelet drives systemd through libcontainer's cgroup managers
//     (github.com/opencontainers/cgroups); this package speaks to systemd's
//     D-Bus API directly, with the same unit names and properties, and
//     leaves device rules, cpusets per pod and freezing out as the kubelet
//     does (SkipDevices, SkipFreezeOnSet).
//   - The systemd driver takes only "/" as the cgroup root.
//   - Fewer "update" samples of kubelet_cgroup_manager_duration_seconds:
//     the kubelet writes both QoS tiers on every pod sync and every
//     minute, and at start updates kubepods again after creating it (node
//     allocatable enforcement); UpdateQoS writes, and times, only the
//     burstable tier and only when its shares change, and Setup times one
//     operation per cgroup. kubelet_cgroup_version is set by New, not when
//     the agent starts running.
//
// The Manager writes only what it is asked to: EnsurePod on first sync,
// UpdatePod on an in-place resize, UpdateQoS whenever the set of pods
// changes (the burstable tier's CPU shares follow the burstable pods'
// requests), Destroy when a pod is gone (its remaining processes killed
// first). PodResources is the pure computation behind them.
//
// # Metrics
//
// With Config.Registerer the Manager records the kubelet's
// kubelet_cgroup_manager_duration_seconds{operation_type} (default
// buckets), timed on Config.Clock, failures included: "create" when Setup
// or EnsurePod makes a cgroup, "update" when Setup finds one already there
// and for UpdatePod and an UpdateQoS that writes, "destroy" for Destroy's
// removal of a cgroup (after its processes are killed, which the kubelet
// does not time either). kubelet_cgroup_version is the host's cgroup
// version, 1 or 2. Registering them twice on one registry is an error
// from New.
package cgroups
