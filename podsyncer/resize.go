package podsyncer

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/allocation"
	"github.com/nodekit/nodekit/cgroups"
)

// allocate handles an in-place resize of pod's spec (allocating its new
// resources when they fit) and returns the pod with its allocated
// resources, which is what the rest of the sync runs.
func (s *Syncer) allocate(ctx context.Context, pod *v1.Pod) *v1.Pod {
	if s.alloc == nil {
		return pod
	}
	started, pending := s.alloc.Resize(ctx, pod, s.activePods)
	switch {
	case started:
		s.event(pod, v1.EventTypeNormal, "ResizeStarted", "Pod resize started: %s", allocation.Summary(pod))
	case pending:
		for _, c := range s.alloc.Conditions(pod.UID) {
			if c.Type == v1.PodResizePending {
				s.event(pod, v1.EventTypeWarning, "Resize"+c.Reason, "Pod resize %s: %s", c.Reason, c.Message)
			}
		}
	}
	return s.alloc.Allocated(pod)
}

// actuateResize applies the allocated resources of pod (an allocated pod)
// to its running containers that do not run with them yet, widening the
// pod cgroup first and narrowing it last so that no container is ever
// limited by a pod cgroup smaller than itself.
func (s *Syncer) actuateResize(ctx context.Context, pod *v1.Pod, rtp *podRuntime) {
	if s.alloc == nil {
		return
	}
	err := s.resizeContainers(ctx, pod, rtp)
	if s.alloc.Actuation(pod.UID, err) {
		s.event(pod, v1.EventTypeNormal, "ResizeCompleted", "Pod resize completed: %s", allocation.Summary(pod))
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Pod resize failed", "pod", klog.KObj(pod))
		s.event(pod, v1.EventTypeWarning, "ResizeError", "Pod resize error: %v", err)
	}
}

func (s *Syncer) resizeContainers(ctx context.Context, pod *v1.Pod, rtp *podRuntime) error {
	type change struct {
		id string
		c  *v1.Container
	}
	var todo []change
	for _, c := range resizable(pod) {
		st := rtp.latest(c.Name)
		if st == nil || st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		want := effectiveResources(pod, c)
		act, ok := s.alloc.Actuated(pod.UID, st.Id)
		if !ok {
			// Started before this agent ran: it runs with what it was
			// created with, which was allocated then.
			s.alloc.SetActuated(pod.UID, st.Id, want)
			continue
		}
		if sameResources(act, want) {
			continue
		}
		if resizeNeedsRestart(c, act, want) {
			return fmt.Errorf("container %s awaits its restart for the resize", c.Name)
		}
		todo = append(todo, change{st.Id, c})
	}
	var want, cur cgroups.Resources
	if s.cgroups != nil {
		want = cgroups.PodResources(pod)
		var err error
		if cur, err = s.cgroups.PodConfig(pod); err != nil {
			return fmt.Errorf("read the pod cgroup: %w", err)
		}
		if want.Memory > 0 && (cur.Memory < 0 || want.Memory < cur.Memory) {
			if usage, err := s.cgroups.PodMemoryUsage(pod); err == nil && usage > want.Memory {
				return fmt.Errorf("attempting to set pod memory limit (%d) below current usage (%d)", want.Memory, usage)
			}
		}
		if len(todo) > 0 {
			if err := s.widenPodCgroup(ctx, pod, cur, want); err != nil {
				return err
			}
		}
	}
	memCap := s.memoryCapacity()
	qos := cgroups.QOSClass(pod)
	for _, ch := range todo {
		r := containerResources(pod, ch.c, qos, memCap)
		if err := s.rt.UpdateContainerResources(ctx, ch.id, &runtimeapi.ContainerResources{Linux: r}); err != nil {
			return fmt.Errorf("update the resources of container %s: %w", ch.c.Name, err)
		}
		s.alloc.SetActuated(pod.UID, ch.id, effectiveResources(pod, ch.c))
		klog.FromContext(ctx).V(2).Info("Resized container", "pod", klog.KObj(pod), "container", ch.c.Name)
	}
	// Every container has its allocation: the pod cgroup gets the pod's
	// (narrower, after a shrink or a restart-resize) values.
	if s.cgroups != nil && !samePodCgroup(s.cgroups, cur, want) {
		if err := s.cgroups.UpdatePod(ctx, pod, want); err != nil {
			return fmt.Errorf("set the pod cgroup: %w", err)
		}
	}
	s.alloc.SetPodActuated(pod.UID, pod.Spec.Resources)
	return nil
}

// effectiveResources are the resources container c of pod runs with: its
// own, with the pod-level CPU and memory limits standing in for the ones
// it does not set (the kubelet's getCPULimit and getMemoryLimit).
func effectiveResources(pod *v1.Pod, c *v1.Container) v1.ResourceRequirements {
	r := *c.Resources.DeepCopy()
	if !resourcehelper.IsPodLevelResourcesSet(pod) {
		return r
	}
	for _, n := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		q, ok := pod.Spec.Resources.Limits[n]
		if own := r.Limits[n]; !ok || !own.IsZero() {
			continue
		}
		if r.Limits == nil {
			r.Limits = v1.ResourceList{}
		}
		r.Limits[n] = q.DeepCopy()
	}
	return r
}

// ownResources is what a container's status reports of act (what it runs
// with): the limits it sets itself, not those it has from the pod.
func ownResources(c *v1.Container, act v1.ResourceRequirements) v1.ResourceRequirements {
	out := v1.ResourceRequirements{Requests: act.Requests, Claims: act.Claims}
	for n, q := range act.Limits {
		if _, own := c.Resources.Limits[n]; own {
			if out.Limits == nil {
				out.Limits = v1.ResourceList{}
			}
			out.Limits[n] = q
		}
	}
	return out
}

// widenPodCgroup lets the pod cgroup admit both its current and its
// allocated limits, so that containers started or updated with the new
// ones fit (cgroup v1 refuses a CFS quota above the parent's).
func (s *Syncer) widenPodCgroup(ctx context.Context, pod *v1.Pod, cur, want cgroups.Resources) error {
	w := widest(cur, want)
	if w.CPUQuota == cur.CPUQuota && w.Memory == cur.Memory {
		return nil
	}
	if err := s.cgroups.UpdatePod(ctx, pod, cgroups.Resources{CPUQuota: w.CPUQuota, CPUPeriod: w.CPUPeriod, Memory: w.Memory}); err != nil {
		return fmt.Errorf("widen the pod cgroup: %w", err)
	}
	return nil
}

// prepareResize widens an existing pod cgroup before a sync starts
// containers with resources a resize changed.
func (s *Syncer) prepareResize(ctx context.Context, pod *v1.Pod) error {
	if s.cgroups == nil || s.alloc == nil || !s.cgroups.PodExists(pod) {
		return nil
	}
	cur, err := s.cgroups.PodConfig(pod)
	if err != nil {
		return fmt.Errorf("read the pod cgroup: %w", err)
	}
	return s.widenPodCgroup(ctx, pod, cur, cgroups.PodResources(pod))
}

// samePodCgroup compares the cgroup's values a with the wanted b: limits
// exactly (memory as the kernel rounds it to pages), shares as m's
// SameShares (on cgroup v2, as far as weights tell them apart).
func samePodCgroup(m Cgroups, a, b cgroups.Resources) bool {
	const page = 4096
	sameMem := a.Memory == b.Memory || (b.Memory > 0 && a.Memory == b.Memory/page*page)
	return a.CPUQuota == b.CPUQuota && sameMem && m.SameShares(a.CPUShares, b.CPUShares)
}

// resizable are the containers an in-place resize applies to while they
// run: init containers (sidecars, and others while they still run, as the
// kubelet's InPlacePodVerticalScalingInitContainers) and app containers.
func resizable(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// widest is a pod cgroup config that admits both a and b: the larger
// limit of each (unlimited beats any), b's shares and period.
func widest(a, b cgroups.Resources) cgroups.Resources {
	wider := func(x, y int64) int64 {
		if x < 0 || y < 0 {
			return -1
		}
		return max(x, y)
	}
	return cgroups.Resources{CPUShares: b.CPUShares, CPUPeriod: b.CPUPeriod,
		CPUQuota: wider(a.CPUQuota, b.CPUQuota), Memory: wider(a.Memory, b.Memory)}
}

func sameResources(a, b v1.ResourceRequirements) bool {
	return sameList(a.Requests, b.Requests) && sameList(a.Limits, b.Limits)
}

func sameList(a, b v1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for n, q := range a {
		if o, ok := b[n]; !ok || o.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

// resizeNeedsRestart: the resources c should run with (want, its
// effectiveResources) change one from what its instance runs with (act)
// whose resize policy is RestartContainer.
func resizeNeedsRestart(c *v1.Container, act, want v1.ResourceRequirements) bool {
	for _, p := range c.ResizePolicy {
		if p.RestartPolicy != v1.RestartContainer {
			continue
		}
		if !sameQuantity(act.Requests, want.Requests, p.ResourceName) || !sameQuantity(act.Limits, want.Limits, p.ResourceName) {
			return true
		}
	}
	return false
}

func sameQuantity(a, b v1.ResourceList, n v1.ResourceName) bool {
	x, okx := a[n]
	y, oky := b[n]
	return okx == oky && (!okx || x.Cmp(y) == 0)
}
