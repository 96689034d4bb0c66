// Package allocation keeps the resources the agent has granted each pod's
// containers (their "allocated" resources) apart from what the pod spec
// asks for, which is how the kubelet handles in-place pod resize: a pod's
// new resources are allocated only when they fit beside the other pods'
// allocations (else the resize is pending, Deferred or Infeasible), then
// actuated container by container; until every running container has its
// allocated resources applied, the resize is in progress.
//
// Deferred resizes are retried in the kubelet's order (one that does not
// increase requests, then priority, then Guaranteed QoS, then the longest
// pending): a pod's Resize first tries those ranked ahead of it. A resize
// allocated that way is reported by its own pod's next sync as in
// progress, without a ResizeStarted event (the kubelet records one).
//
// Pod-level resources (spec.resources) are allocated and resized with the
// containers' (the kubelet's InPlacePodLevelResourcesVerticalScaling):
// Allocated carries them, and SetPodActuated/PodActuated record what the
// pod cgroup was last set to.
//
// The Manager answers the pod status's questions: allocatedResources and
// resources of each container and of the pod, and the PodResizePending and
// PodResizeInProgress conditions. The caller actuates (pod cgroup, CRI
// UpdateContainerResources) and reports with SetActuated and
// SetPodActuated.
package allocation
