package prober

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/kubetypes"
)

// podStatus is what the workers need of a pod's latest status, copied out
// of the v1.PodStatus given to UpdatePodStatus.
type podStatus struct {
	phase      v1.PodPhase
	ip         string
	deleting   bool
	containers []containerState // regular containers, then init containers
	// restartingAll: a container terminated with an exit code one of its
	// RestartAllContainers rules matches; every container will run again.
	restartingAll bool
}

// containerState is what a worker needs of a container's status.
type containerState struct {
	name       string
	id         string // "<runtime>://<id>"
	init       bool
	running    bool
	startedAt  time.Time
	terminated bool
	exitCode   int32
	started    bool
}

// find returns the status of the named container that has an ID, looking
// at regular containers first, like upstream.
func (s *podStatus) find(name string) (containerState, bool) {
	for _, c := range s.containers {
		if c.name == name && c.id != "" {
			return c, true
		}
	}
	return containerState{}, false
}

// UpdatePodStatus sets Started and Ready on the container statuses of
// status the way upstream's prober manager does, and records the status
// (pod IP, phase, deletion, and each container's ID, state and start time)
// as what the probes of pod work from. The host calls it whenever it
// computes pod's status (kubelet: generateAPIPodStatus) and at least
// whenever a container starts, restarts or exits; probes of a pod whose
// status was never given wait for one.
//
//   - A running container is started once its startup probe succeeded, or
//     at once if it has none.
//   - A started, running container is ready once its readiness probe
//     succeeded, or at once if it has none. While it is not, its readiness
//     probe is triggered to run now.
//   - A container that was running since before the Manager was created
//     (a kubelet restart) keeps being ready until its readiness probe says
//     otherwise, unless it has a readiness probe and pod was not Ready.
//   - A non-sidecar init container is ready once it exited with code 0.
func (m *Manager) UpdatePodStatus(ctx context.Context, pod *v1.Pod, status *v1.PodStatus) {
	var triggers []probeKey // run once the probes can see this status
	for i := range status.ContainerStatuses {
		c := &status.ContainerStatuses[i]
		started := m.isStarted(pod, c)
		c.Started = &started
		if started {
			c.Ready = m.isReady(ctx, pod, c, containerSpec(pod.Spec.Containers, c.Name), &triggers)
		}
	}
	for i := range status.InitContainerStatuses {
		c := &status.InitContainerStatuses[i]
		started := m.isStarted(pod, c)
		c.Started = &started
		spec := containerSpec(pod.Spec.InitContainers, c.Name)
		if spec == nil {
			klog.FromContext(ctx).V(4).Info("Init container status without spec", "pod", klog.KObj(pod), "containerName", c.Name)
			continue
		}
		if !kubetypes.IsSidecar(spec) {
			if t := c.State.Terminated; t != nil && t.ExitCode == 0 {
				c.Ready = true
			}
			continue
		}
		if started {
			c.Ready = m.isReady(ctx, pod, c, spec, &triggers)
		}
	}
	snap := snapshot(pod, status)
	m.mu.Lock()
	m.pods[pod.UID] = snap
	m.mu.Unlock()
	// After the snapshot: a triggered readiness probe that read the
	// previous one would find its container not started and wait a period.
	for _, key := range triggers {
		m.trigger(key)
	}
}

func (m *Manager) isStarted(pod *v1.Pod, c *v1.ContainerStatus) bool {
	if c.State.Running == nil {
		return false
	}
	if r, ok := m.results[Startup].get(c.ContainerID); ok {
		return r == Success
	}
	if c.Started != nil && *c.Started {
		return true
	}
	return !m.hasWorker(probeKey{pod: pod.UID, container: c.Name, probe: Startup})
}

func (m *Manager) isReady(ctx context.Context, pod *v1.Pod, c *v1.ContainerStatus, spec *v1.Container, triggers *[]probeKey) bool {
	if c.State.Running == nil {
		return false
	}
	r, known := m.results[Readiness].get(c.ContainerID)
	if known && r == Success {
		return true
	}
	key := probeKey{pod: pod.UID, container: c.Name, probe: Readiness}
	ready := !m.hasWorker(key)
	if !ready {
		klog.FromContext(ctx).V(5).Info("Triggering readiness probe", "pod", klog.KObj(pod), "containerName", c.Name)
		*triggers = append(*triggers, key)
	}
	started := c.State.Running.StartedAt.Time
	if spec != nil && !started.IsZero() && started.Before(m.start.Add(-restartGrace)) {
		if !ready && !known {
			ready = true
		}
		if spec.ReadinessProbe != nil && !podReady(pod) {
			ready = false
		}
	}
	return ready
}

func podReady(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func containerSpec(cs []v1.Container, name string) *v1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func snapshot(pod *v1.Pod, status *v1.PodStatus) *podStatus {
	s := &podStatus{
		phase:      status.Phase,
		ip:         status.PodIP,
		deleting:   pod.DeletionTimestamp != nil,
		containers: make([]containerState, 0, len(status.ContainerStatuses)+len(status.InitContainerStatuses)),
	}
	add := func(cs []v1.ContainerStatus, init bool) {
		var spec *v1.Container
		for i := range cs {
			c := &cs[i]
			st := containerState{name: c.Name, id: c.ContainerID, init: init, started: c.Started != nil && *c.Started}
			if r := c.State.Running; r != nil {
				st.running, st.startedAt = true, r.StartedAt.Time
			}
			if t := c.State.Terminated; t != nil {
				st.terminated, st.exitCode = true, t.ExitCode
				if init {
					spec = containerSpec(pod.Spec.InitContainers, c.Name)
				} else {
					spec = containerSpec(pod.Spec.Containers, c.Name)
				}
				s.restartingAll = s.restartingAll || spec != nil && kubetypes.RestartsAllContainers(spec, t.ExitCode)
			}
			s.containers = append(s.containers, st)
		}
	}
	add(status.ContainerStatuses, false)
	add(status.InitContainerStatuses, true)
	return s
}
