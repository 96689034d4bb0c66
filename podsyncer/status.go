package podsyncer

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	netutils "k8s.io/utils/net"

	"github.com/nodekit/nodekit/cgroups"
	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/podstatus"
	"github.com/nodekit/nodekit/podworkers"
)

// statusWriter builds v1.PodStatus from the runtime and hands it to the
// status manager.
type statusWriter struct {
	mgr         StatusManager
	clock       clock.PassiveClock
	runtimeName string
	// hostIPs are the node's addresses, one per family (the same source
	// as the node status).
	hostIPs func() []string
	backoff *crashBackoff
	// probes sets Ready and Started on container statuses; nil: none.
	probes Probes
	// alloc tells the resources running containers were given and the
	// pod's resize conditions; nil without in-place resize.
	alloc Allocation
	// recursiveReadOnly says whether a runtime handler makes read-only
	// mounts recursive (the volumeMounts status); nil: none does.
	recursiveReadOnly func(handler string) bool
	metrics           *metrics

	mu sync.Mutex
	// startErrors holds why a container could not be created, by pod UID
	// and container name, until it is.
	startErrors map[types.UID]map[string]v1.ContainerStateWaiting
}

// startFailed records (reason non-empty) or clears why container name of
// pod uid could not start; its status then waits with that reason.
func (w *statusWriter) startFailed(uid types.UID, name, reason, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if reason == "" {
		delete(w.startErrors[uid], name)
		return
	}
	if w.startErrors == nil {
		w.startErrors = map[types.UID]map[string]v1.ContainerStateWaiting{}
	}
	if w.startErrors[uid] == nil {
		w.startErrors[uid] = map[string]v1.ContainerStateWaiting{}
	}
	w.startErrors[uid][name] = v1.ContainerStateWaiting{Reason: reason, Message: message}
}

func (w *statusWriter) startError(uid types.UID, name string) (v1.ContainerStateWaiting, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.startErrors[uid][name]
	return e, ok
}

// write computes the pod's status, applies statusFn and hands it to the
// status manager, which writes it (to the mirror pod for a static pod).
// terminal: the pod's containers were stopped for good (SyncTerminatingPod,
// SyncTerminatedPod): nothing restarts, and the phase is final.
func (w *statusWriter) write(ctx context.Context, pod *v1.Pod, rtp *podRuntime, statusFn podworkers.StatusFunc, terminal bool) {
	old, ok := w.mgr.PodStatus(pod.UID)
	if !ok {
		old = *pod.Status.DeepCopy()
	}
	status := w.build(ctx, pod, rtp, &old, terminal)
	if statusFn != nil {
		statusFn(&status)
	}
	if podstatus.IsTerminal(old.Phase) {
		// Terminal phases are final, with the reason that made them so.
		status.Phase, status.Reason, status.Message = old.Phase, old.Reason, old.Message
	}
	if !terminal && !podstatus.IsTerminal(status.Phase) {
		w.metrics.observePodStart(pod, &old, ok, status.Phase, w.clock.Now())
	}
	w.mgr.SetPodStatus(pod, status)
}

// finishDeletion forgets the pod's start errors and has the status manager
// complete a graceful deletion once the final status is written.
func (w *statusWriter) finishDeletion(pod *v1.Pod) {
	w.mu.Lock()
	delete(w.startErrors, pod.UID)
	w.mu.Unlock()
	w.mgr.Finish(pod)
}

// startTime is when the agent first saw the pod, as its status reports.
func (w *statusWriter) startTime(pod *v1.Pod) *metav1.Time {
	if s, ok := w.mgr.PodStatus(pod.UID); ok && s.StartTime != nil {
		return s.StartTime
	}
	return pod.Status.StartTime
}

// build computes the status of pod from its runtime state.
func (w *statusWriter) build(ctx context.Context, pod *v1.Pod, rtp *podRuntime, old *v1.PodStatus, terminal bool) v1.PodStatus {
	now := metav1.NewTime(w.clock.Now())
	s := v1.PodStatus{StartTime: old.StartTime, QOSClass: cgroups.QOSClass(pod)} // as the API server set it
	if s.StartTime == nil {
		s.StartTime = &now
	}
	hostIPs := w.hostIPs()
	for _, ip := range hostIPs {
		s.HostIPs = append(s.HostIPs, v1.HostIP{IP: ip})
	}
	if len(hostIPs) > 0 {
		s.HostIP = hostIPs[0]
	}
	switch {
	case pod.Spec.HostNetwork && len(hostIPs) > 0:
		s.PodIP = hostIPs[0] // the node's addresses
		for _, ip := range hostIPs {
			s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
		}
	default:
		ips := sortPodIPs(rtp.sandboxIPs, hostIPs)
		if len(ips) == 0 && rtp.readySandbox() == nil {
			// The sandbox is gone or stopped: a completed pod keeps the
			// address it had, as the kubelet's PLEG cache keeps it (also
			// across an agent restart, from the API's status).
			for _, ip := range old.PodIPs {
				ips = append(ips, ip.IP)
			}
		}
		for _, ip := range ips {
			s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
		}
		if len(ips) > 0 {
			s.PodIP = ips[0]
		}
	}
	// Initialized: every init container succeeded and every sidecar
	// started — or app containers ran already in this sandbox.
	appsRan := false
	for i := range pod.Spec.Containers {
		appsRan = appsRan || rtp.latest(pod.Spec.Containers[i].Name) != nil
	}
	restarting := restartingAll(pod, rtp, old)
	rro := w.supportsRecursiveReadOnly(pod, rtp)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		s.InitContainerStatuses = append(s.InitContainerStatuses,
			w.containerStatus(pod, c, rtp, "PodInitializing", terminal, findStatus(old.InitContainerStatuses, c.Name), restarting, rro))
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		s.ContainerStatuses = append(s.ContainerStatuses,
			w.containerStatus(pod, c, rtp, "ContainerCreating", terminal, findStatus(old.ContainerStatuses, c.Name), restarting, rro))
	}
	for i := range pod.Spec.EphemeralContainers {
		c := (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		s.EphemeralContainerStatuses = append(s.EphemeralContainerStatuses,
			w.containerStatus(pod, c, rtp, "ContainerCreating", terminal, findStatus(old.EphemeralContainerStatuses, c.Name), false, rro))
	}
	if w.probes != nil {
		w.probes.UpdatePodStatus(ctx, pod, &s)
	} else {
		// No prober: ready as a container without probes is, running (a
		// sidecar) or, for an init container, completed.
		for i := range s.ContainerStatuses {
			s.ContainerStatuses[i].Ready = s.ContainerStatuses[i].State.Running != nil
		}
		for i := range s.InitContainerStatuses {
			cs := &s.InitContainerStatuses[i]
			done := cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
			cs.Ready = done || cs.State.Running != nil && kubetypes.IsSidecar(&pod.Spec.InitContainers[i])
		}
	}
	var incomplete []string
	for i, cs := range s.InitContainerStatuses {
		done := cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		if kubetypes.IsSidecar(&pod.Spec.InitContainers[i]) {
			done = cs.Started != nil && *cs.Started
		}
		if !done {
			incomplete = append(incomplete, cs.Name)
		}
	}
	initialized := len(incomplete) == 0 || appsRan
	if !initialized {
		for i := range s.ContainerStatuses {
			if wt := s.ContainerStatuses[i].State.Waiting; wt != nil && wt.Reason == "ContainerCreating" {
				wt.Reason = "PodInitializing"
			}
		}
	}
	s.Phase = podPhase(pod, &s, appsRan, terminal)
	s.ObservedGeneration = pod.Generation
	var extra []v1.PodCondition
	if kubetypes.MayRestartAllContainers(&pod.Spec) {
		extra = append(extra, restartingCondition(pod, rtp, s.Phase, restarting))
	}
	if w.alloc != nil {
		extra = append(extra, w.alloc.Conditions(pod.UID)...)
		s.AllocatedResources, s.Resources = w.podResources(pod)
	}
	s.Conditions = podConditions(pod, &s, old, now, rtp.readySandbox() != nil, initialized, incomplete, extra...)
	limitTerminationMessages(pod, &s)
	return s
}

// sortPodIPs orders a sandbox's IPs as the kubelet does: the first of the
// node's primary IP family (IPv4 if the node has no address), then the
// first of the other family; any further ones are dropped (the API allows
// one per family).
func sortPodIPs(ips, hostIPs []string) []string {
	primary := len(hostIPs) == 0 || netutils.IsIPv4String(hostIPs[0])
	var out []string
	for _, v4 := range []bool{primary, !primary} {
		for _, ip := range ips {
			if netutils.IsIPv4String(ip) == v4 && netutils.ParseIPSloppy(ip) != nil {
				out = append(out, ip)
				break
			}
		}
	}
	return out
}

// podResources are the pod-level allocatedResources (the requests of the
// allocated pod, its pod-level ones where set) and resources of a pod's
// status: the requests and limits of the pod as its cgroup was last set,
// which lag the allocation until a resize is actuated. (The kubelet reads
// a running pod's back from its cgroup, rounding included.)
func (w *statusWriter) podResources(pod *v1.Pod) (v1.ResourceList, *v1.ResourceRequirements) {
	allocated := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	actual := pod
	if act, ok := w.alloc.PodActuated(pod.UID); ok && !apiequality.Semantic.DeepEqual(act, pod.Spec.Resources) {
		actual = pod.DeepCopy()
		actual.Spec.Resources = act
	}
	r := actual.Spec.Resources.DeepCopy()
	if r == nil {
		r = &v1.ResourceRequirements{}
	}
	r.Requests = resourcehelper.PodRequests(actual, resourcehelper.PodResourcesOptions{})
	r.Limits = resourcehelper.PodLimits(actual, resourcehelper.PodResourcesOptions{})
	return allocated, r
}

// limitTerminationMessages keeps a pod's termination messages within the
// kubelet's 12 KiB per pod: each container state's message is cut to an
// equal share of it.
func limitTerminationMessages(pod *v1.Pod, s *v1.PodStatus) {
	share := maxPodTerminationMessages
	if n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers) + len(pod.Spec.EphemeralContainers); n > 0 {
		share /= n
	}
	cut := func(st *v1.ContainerState) {
		if t := st.Terminated; t != nil && len(t.Message) > share {
			t.Message = t.Message[:share]
		}
	}
	for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			cut(&list[i].State)
			cut(&list[i].LastTerminationState)
		}
	}
}

// podConditions are the conditions the kubelet owns, with its reasons and
// messages, followed by every other condition of the pod as found (set by
// others: readiness gates, DisruptionTarget, ...).
// extra are the pod's AllContainersRestarting and resize conditions, which
// replace any it had.
func podConditions(pod *v1.Pod, s, old *v1.PodStatus, now metav1.Time, sandboxReady, initialized bool, incomplete []string, extra ...v1.PodCondition) []v1.PodCondition {
	initCond := v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	switch {
	case s.Phase == v1.PodSucceeded:
		initCond.Reason = "PodCompleted"
	case !initialized && wasInitialized(old):
		// A pod, once initialized, stays so while its init containers
		// run again (a RestartAllContainers reset, a new sandbox).
	case !initialized:
		initCond.Status, initCond.Reason = v1.ConditionFalse, "ContainersNotInitialized"
		initCond.Message = fmt.Sprintf("containers with incomplete status: %v", incomplete)
	}
	ready, podReady := podstatus.ReadyConditions(pod, s)
	sandbox := condition(v1.PodReadyToStartContainers, sandboxReady, "")
	scheduled, byScheduler := v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue}, false
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled {
			scheduled, byScheduler = c, true
		}
	}
	// The kubelet reports PodScheduled True for the pod it runs (the
	// scheduler's transition time kept), at the generation it observed.
	scheduled.Status, scheduled.Reason, scheduled.Message = v1.ConditionTrue, "", ""
	out := conditions(old, now, sandbox, initCond, ready, podReady)
	if byScheduler {
		out = append(out, scheduled)
	} else {
		out = append(out, conditions(old, now, scheduled)...) // bound by its creator
	}
	for i := range out {
		out[i].ObservedGeneration = pod.Generation
	}
	out = append(out, conditions(old, now, extra...)...)
	disruption := false
	for _, c := range pod.Status.Conditions {
		if !podstatus.OwnedByKubelet(c.Type) {
			out = append(out, c)
			disruption = disruption || c.Type == v1.DisruptionTarget
		}
	}
	// The disruption an eviction recorded stays until it is written.
	for _, c := range old.Conditions {
		if c.Type == v1.DisruptionTarget && !disruption {
			out = append(out, c)
		}
	}
	return out
}

func wasInitialized(old *v1.PodStatus) bool {
	for _, c := range old.Conditions {
		if c.Type == v1.PodInitialized {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// restartingAll reports whether the pod is being reset by a
// RestartAllContainers rule: the newest instance of an init or regular
// container exited, or the status last reported one terminated, with a
// code such a rule of the container matches (upstream's
// ShouldAllContainersRestart).
func restartingAll(pod *v1.Pod, rtp *podRuntime, old *v1.PodStatus) bool {
	if !kubetypes.MayRestartAllContainers(&pod.Spec) {
		return false
	}
	for _, group := range []struct {
		spec []v1.Container
		old  []v1.ContainerStatus
	}{{pod.Spec.InitContainers, old.InitContainerStatuses}, {pod.Spec.Containers, old.ContainerStatuses}} {
		for i := range group.spec {
			c := &group.spec[i]
			if st := rtp.latest(c.Name); st != nil && st.State == runtimeapi.ContainerState_CONTAINER_EXITED &&
				kubetypes.RestartsAllContainers(c, st.ExitCode) {
				return true
			}
			if cs := findStatus(group.old, c.Name); cs != nil && cs.State.Terminated != nil &&
				kubetypes.RestartsAllContainers(c, cs.State.Terminated.ExitCode) {
				return true
			}
		}
	}
	return false
}

// restartingCondition is the AllContainersRestarting condition of a pod
// that may be reset: True from the exit that triggers a reset until every
// init and regular container is gone from the runtime.
func restartingCondition(pod *v1.Pod, rtp *podRuntime, phase v1.PodPhase, restarting bool) v1.PodCondition {
	c := v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse}
	if phase == v1.PodFailed {
		c.Reason = "PodFailed"
		return c
	}
	if !restarting {
		return c
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if rtp.latest(list[i].Name) != nil || rtp.previous(list[i].Name) != nil {
				c.Status, c.Reason, c.Message = v1.ConditionTrue, "RestartAllContainersStarted", "container exited with restart policy rule"
				return c
			}
		}
	}
	return c
}

// findStatus is the status of the named container in cs, nil if none.
func findStatus(cs []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func condition(t v1.PodConditionType, ok bool, reason string) v1.PodCondition {
	c := v1.PodCondition{Type: t, Status: v1.ConditionTrue}
	if !ok {
		c.Status, c.Reason = v1.ConditionFalse, reason
	}
	return c
}

// conditions stamps transition times, keeping the old one where the status
// did not change.
func conditions(old *v1.PodStatus, now metav1.Time, cs ...v1.PodCondition) []v1.PodCondition {
	for i := range cs {
		cs[i].LastTransitionTime = now
		for _, o := range old.Conditions {
			if o.Type == cs[i].Type && o.Status == cs[i].Status {
				cs[i].LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	return cs
}

// containerStatus is the status of container c from its instances in the
// runtime and old, the status last reported for it (nil if none), which
// carries its restart count and last termination across instances the
// runtime no longer holds, as the kubelet's since v1.36
// (RestartAllContainersOnContainerExits). restarting: the pod is being
// reset (restartingAll).
// supportsRecursiveReadOnly says whether the pod's runtime handler makes
// read-only mounts recursive: the handler of its newest sandbox, the
// default one for a pod without a RuntimeClass; false while a RuntimeClass
// pod has no sandbox yet (its handler is not known without a lookup).
func (w *statusWriter) supportsRecursiveReadOnly(pod *v1.Pod, rtp *podRuntime) bool {
	if w.recursiveReadOnly == nil {
		return false
	}
	switch {
	case len(rtp.sandboxes) > 0 && rtp.sandboxes[0].RuntimeHandler != "":
		return w.recursiveReadOnly(rtp.sandboxes[0].RuntimeHandler)
	case pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName == "":
		return w.recursiveReadOnly("")
	}
	return false
}

func (w *statusWriter) containerStatus(pod *v1.Pod, c *v1.Container, rtp *podRuntime, waitReason string, terminal bool, old *v1.ContainerStatus, restarting, rro bool) v1.ContainerStatus {
	cs := v1.ContainerStatus{Name: c.Name, Image: c.Image, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: waitReason}},
		VolumeMounts: volumeMountStatuses(c, rro)}
	failed, hasFailed := w.startError(pod.UID, c.Name)
	if hasFailed {
		cs.State.Waiting = &failed
	}
	st := rtp.latest(c.Name)
	if w.alloc != nil && st != nil {
		// pod carries its allocated resources; a running container
		// reports what it was actually given. A container the runtime
		// has no instance of reports neither, as the kubelet's.
		cs.AllocatedResources = c.Resources.Requests
		cs.Resources = c.Resources.DeepCopy()
		if st != nil && st.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			if act, ok := w.alloc.Actuated(pod.UID, st.Id); ok {
				own := ownResources(c, act)
				cs.Resources = &own
			}
		}
	}
	if st == nil {
		switch {
		case old == nil:
		case restarting && old.State.Waiting == nil:
			// Removed by the pod's reset: it will run again.
			const msg = "The container is removed because RestartAllContainers in place"
			cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: kubetypes.ReasonRestartingAllContainers, Message: msg}}
			cs.LastTerminationState = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				Reason: kubetypes.ReasonRestartingAllContainers, Message: msg, ExitCode: 137}}
			cs.RestartCount = old.RestartCount + 1
		case old.State.Terminated != nil:
			// It ran and ended; the runtime no longer holds it.
			return *old.DeepCopy()
		default:
			cs.RestartCount, cs.LastTerminationState = old.RestartCount, *old.LastTerminationState.DeepCopy()
			if old.State.Running != nil && !hasFailed && cs.LastTerminationState.Terminated == nil {
				// It was running and is gone without a trace (removed,
				// or the runtime lost it while the agent was away): it
				// stopped, as the kubelet infers, rather than the pod
				// falling back to Pending; unless the pod is being
				// deleted, it is restarted.
				cs.LastTerminationState = v1.ContainerState{Terminated: lostRunning()}
				if pod.DeletionTimestamp == nil {
					cs.RestartCount++
				}
			}
		}
		return cs
	}
	cs.ContainerID = w.runtimeName + "://" + st.Id
	cs.ImageID = st.ImageRef
	if u := st.GetUser().GetLinux(); u != nil {
		cs.User = &v1.ContainerUser{Linux: &v1.LinuxContainerUser{UID: u.Uid, GID: u.Gid, SupplementalGroups: u.SupplementalGroups}}
	}
	attempt := int32(st.GetMetadata().GetAttempt())
	cs.RestartCount = attempt
	if old != nil {
		cs.RestartCount = max(attempt, old.RestartCount)
	}
	switch prev := rtp.previous(c.Name); {
	case prev != nil && prev.State == runtimeapi.ContainerState_CONTAINER_EXITED:
		cs.LastTerminationState = v1.ContainerState{Terminated: terminated(c, prev, w.runtimeName)}
	case old == nil:
	case old.ContainerID != cs.ContainerID && old.State.Terminated != nil:
		// The instance before this one, removed from the runtime.
		cs.LastTerminationState = v1.ContainerState{Terminated: old.State.Terminated.DeepCopy()}
	case old.ContainerID != "" && old.ContainerID != cs.ContainerID && old.State.Running != nil:
		// The instance before this one was last seen running and is
		// gone without a trace: it stopped, as the kubelet infers.
		cs.LastTerminationState = v1.ContainerState{Terminated: lostRunning()}
	case old.LastTerminationState.Terminated != nil:
		cs.LastTerminationState = v1.ContainerState{Terminated: old.LastTerminationState.Terminated.DeepCopy()}
	}
	switch st.State {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		cs.State = v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Unix(0, st.StartedAt))}}
		started := true
		cs.Started = &started
		if old != nil && old.State.Terminated != nil && old.RestartCount >= attempt {
			// A restart of a terminated instance the runtime no longer
			// holds, which its attempt number does not count.
			cs.RestartCount = old.RestartCount + 1
		}
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		t := terminated(c, st, w.runtimeName)
		cs.State = v1.ContainerState{Terminated: t}
		// A pod being reset starts its containers over at once, without
		// their back-off.
		if !terminal && !restarting && restartsAfter(pod, c, st.ExitCode) {
			if hasFailed {
				cs.LastTerminationState = v1.ContainerState{Terminated: t}
				cs.State = v1.ContainerState{Waiting: &failed}
			} else if wait, _ := w.backoff.inBackoff(backoffKey(pod, c), time.Unix(0, st.FinishedAt)); wait {
				cs.LastTerminationState = v1.ContainerState{Terminated: t}
				cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
					Message: fmt.Sprintf("back-off restarting failed container %s in pod %s", c.Name, klog.KObj(pod))}}
			}
		}
	}
	return cs
}

// lostRunning is the kubelet's termination of a container last seen
// running that the runtime no longer holds.
func lostRunning() *v1.ContainerStateTerminated {
	return &v1.ContainerStateTerminated{Reason: podstatus.ReasonContainerStatusUnknown, ExitCode: 137,
		Message: "The container could not be located when the pod was deleted.  The container used to be Running"}
}

func terminated(c *v1.Container, st *runtimeapi.ContainerStatus, runtimeName string) *v1.ContainerStateTerminated {
	reason := st.Reason
	if reason == "" {
		reason = "Completed"
		if st.ExitCode != 0 {
			reason = "Error"
		}
	}
	return &v1.ContainerStateTerminated{ExitCode: st.ExitCode, Reason: reason, Message: terminationMessage(c, st),
		StartedAt: metav1.NewTime(time.Unix(0, st.StartedAt)), FinishedAt: metav1.NewTime(time.Unix(0, st.FinishedAt)),
		ContainerID: runtimeName + "://" + st.Id}
}

// podPhase follows the kubelet (getPhase with ContainerRestartRules and
// RestartAllContainersOnContainerExits on, their v1.36 defaults): Pending
// while a regular init container has not finished (running, or waiting
// without having run), while a sidecar has not started before any regular
// container ran (appsRan), or while a container waits for its first start;
// Running while one runs or one that stopped will be restarted (by its
// restart rules, its own restart policy or the pod's, or because a
// RestartAllContainers reset removed it); then Succeeded if every
// container exited 0, else Failed — or, once the pod's containers were
// stopped for good (terminal), by their exit codes whatever the policies
// (static pods excepted, as upstream). A failed init container that will
// not be restarted fails the pod.
func podPhase(pod *v1.Pod, s *v1.PodStatus, appsRan, terminal bool) v1.PodPhase {
	lastExit := func(cs *v1.ContainerStatus) *v1.ContainerStateTerminated {
		if t := cs.State.Terminated; t != nil {
			return t
		}
		if cs.State.Waiting != nil {
			return cs.LastTerminationState.Terminated
		}
		return nil
	}
	restarts := func(c *v1.Container, t *v1.ContainerStateTerminated) bool {
		return c != nil && (kubetypes.ContainerShouldRestart(c, &pod.Spec, t.ExitCode) || t.Reason == kubetypes.ReasonRestartingAllContainers)
	}
	pendingInit := false
	for i := range s.InitContainerStatuses {
		cs := &s.InitContainerStatuses[i]
		c := specContainer(pod.Spec.InitContainers, cs.Name)
		if c != nil && kubetypes.IsSidecar(c) {
			started := cs.Started != nil && *cs.Started
			waitsFirst := cs.State.Waiting != nil && cs.LastTerminationState.Terminated == nil
			pendingInit = pendingInit || !appsRan && (cs.State.Running != nil && !started || waitsFirst)
			continue
		}
		t := lastExit(cs)
		if t == nil {
			pendingInit = true // running, or waiting for its first start
			continue
		}
		if t.ExitCode != 0 && !restarts(c, t) {
			return v1.PodFailed
		}
	}
	if pendingInit {
		return v1.PodPending
	}
	var waiting, running, stopped, succeeded, final int
	for i := range s.ContainerStatuses {
		cs := &s.ContainerStatuses[i]
		switch t := lastExit(cs); {
		case cs.State.Running != nil:
			running++
		case t != nil:
			stopped++
			if cs.State.Terminated != nil && t.ExitCode == 0 {
				succeeded++
			}
			if !restarts(specContainer(pod.Spec.Containers, cs.Name), t) {
				final++
			}
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0 || len(s.ContainerStatuses) < len(pod.Spec.Containers):
		return v1.PodPending // waiting, or not known yet
	case running > 0:
		return v1.PodRunning
	case terminal && stopped > 0 && !kubetypes.IsStatic(pod):
		if stopped == succeeded {
			return v1.PodSucceeded
		}
		return v1.PodFailed
	case stopped != final:
		return v1.PodRunning // a stopped container will be started again
	case stopped == succeeded:
		return v1.PodSucceeded
	}
	return v1.PodFailed
}

// specContainer is the container named name in cs, nil if none.
func specContainer(cs []v1.Container, name string) *v1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// restartsAfter tells whether an exited instance of c will be started
// again: sidecars always, ephemeral containers never, init and app
// containers as the pod's restart policy says (init containers only after
// a failure).
func restartsAfter(pod *v1.Pod, c *v1.Container, exitCode int32) bool {
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == c.Name {
			return false
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			if kubetypes.IsSidecar(c) {
				return true
			}
			return exitCode != 0 && kubetypes.ContainerShouldRestart(c, &pod.Spec, exitCode)
		}
	}
	return kubetypes.ContainerShouldRestart(c, &pod.Spec, exitCode)
}
