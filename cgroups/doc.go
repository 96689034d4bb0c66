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
// hierarchy are handled, with the cgroupfs driver. The systemd driver is
// refused at construction rather than half-supported.
//
// The Manager writes only what it is asked to: EnsurePod on first sync,
// UpdatePod on an in-place resize, UpdateQoS whenever the set of pods
// changes (the burstable tier's CPU shares follow the burstable pods'
// requests), Destroy when a pod is gone (its remaining processes killed
// first). PodResources is the pure computation behind them.
package cgroups
