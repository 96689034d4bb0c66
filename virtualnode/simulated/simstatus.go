package simulated

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Container state reasons the simulator reports, as the kubelet does.
const (
	reasonCreating      = "ContainerCreating"
	reasonPodInit       = "PodInitializing"
	reasonCompleted     = "Completed"
	reasonError         = "Error"
	reasonNotReady      = "ContainersNotReady"
	reasonNotInit       = "ContainersNotInitialized"
	reasonPodCompleted  = "PodCompleted"
	exitCodeKilled      = 137
	containerIDPrefix   = "virtual://"
	simulatedImageIDTag = "virtual://"
)

// outcome says where a simulated pod is at now: whether its containers
// ran (they run from readyAt), and when and with which code they ended
// (exited on its own or stopped); a zero end means they have not.
func (p *simPod) outcome(now time.Time) (running bool, end time.Time, code int32) {
	n := at(now)
	running = n >= p.readyAt
	switch {
	case p.stopped != 0:
		end = p.stopped.time()
		switch {
		case p.exitAt != 0 && p.stopped <= p.exitAt:
			code = p.exitCode
		case p.killed || p.stopped < p.readyAt:
			code = exitCodeKilled
		}
	case p.exitAt != 0 && n >= p.exitAt:
		end, code = p.exitAt.time(), p.exitCode
	}
	if !end.IsZero() && at(end) < p.readyAt {
		running = false // stopped before it ever ran
	}
	return running, end, code
}

// simStatus is the pure status computation of a simulated pod at now.
func simStatus(pod *v1.Pod, p *simPod, now time.Time) *v1.PodStatus {
	sec := func(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second)) }
	created := sec(p.created.time())
	ip := p.addr().String()
	st := &v1.PodStatus{
		Phase:     v1.PodPending,
		StartTime: &created,
		PodIP:     ip,
		PodIPs:    []v1.PodIP{{IP: ip}},
	}
	running, end, code := p.outcome(now)
	ended := !end.IsZero()
	switch {
	case ended && code == 0:
		st.Phase = v1.PodSucceeded
	case ended:
		st.Phase = v1.PodFailed
	case running:
		st.Phase = v1.PodRunning
	}

	initDone := running || len(pod.Spec.InitContainers) == 0
	for _, c := range pod.Spec.InitContainers {
		cs := v1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: simulatedImageIDTag + c.Image}
		if running {
			cs.ContainerID = containerIDPrefix + string(pod.UID) + "/" + c.Name
			cs.State.Terminated = &v1.ContainerStateTerminated{Reason: reasonCompleted, StartedAt: created,
				FinishedAt: sec(p.readyAt.time()), ContainerID: cs.ContainerID}
		} else {
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: reasonPodInit}
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	for _, c := range pod.Spec.Containers {
		cs := v1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: simulatedImageIDTag + c.Image}
		started := false
		switch {
		case ended && running:
			cs.ContainerID = containerIDPrefix + string(pod.UID) + "/" + c.Name
			reason := reasonCompleted
			if code != 0 {
				reason = reasonError
			}
			cs.State.Terminated = &v1.ContainerStateTerminated{ExitCode: code, Reason: reason,
				StartedAt: sec(p.readyAt.time()), FinishedAt: sec(end), ContainerID: cs.ContainerID}
		case ended: // stopped before it ever ran
			cs.State.Terminated = &v1.ContainerStateTerminated{ExitCode: code, Reason: reasonError,
				StartedAt: created, FinishedAt: sec(end)}
		case running:
			cs.ContainerID = containerIDPrefix + string(pod.UID) + "/" + c.Name
			cs.State.Running = &v1.ContainerStateRunning{StartedAt: sec(p.readyAt.time())}
			cs.Ready, started = true, true
		default:
			reason := reasonCreating
			if !initDone {
				reason = reasonPodInit
			}
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: reason}
		}
		cs.Started = &started
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	initAt := created
	if len(pod.Spec.InitContainers) > 0 && running {
		initAt = sec(p.readyAt.time())
	}
	st.Conditions = simConditions(initDone, running, ended, created, initAt, sec(p.readyAt.time()), sec(end))
	return st
}

func simConditions(initDone, running, ended bool, created, initAt, readyAt, end metav1.Time) []v1.PodCondition {
	cond := func(t v1.PodConditionType, ok bool, at metav1.Time, reason string) v1.PodCondition {
		c := v1.PodCondition{Type: t, Status: v1.ConditionFalse, LastTransitionTime: at, Reason: reason}
		if ok {
			c.Status, c.Reason = v1.ConditionTrue, ""
		}
		return c
	}
	sandbox := cond(v1.PodReadyToStartContainers, !ended, created, "")
	initialized := cond(v1.PodInitialized, initDone, initAt, reasonNotInit)
	readyReason, readyAtTime := reasonNotReady, created
	switch {
	case ended:
		readyReason, readyAtTime = reasonPodCompleted, end
		sandbox.LastTransitionTime = end
	case running:
		readyAtTime = readyAt
	}
	ready := running && !ended
	return []v1.PodCondition{
		sandbox,
		initialized,
		cond(v1.ContainersReady, ready, readyAtTime, readyReason),
		cond(v1.PodReady, ready, readyAtTime, readyReason),
		cond(v1.PodScheduled, true, created, ""),
	}
}
