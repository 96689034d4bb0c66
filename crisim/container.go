package crisim

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// container is the simulated state of one container.
type container struct {
	id          string
	seq         uint64
	sandboxID   string
	target      Match // container, pod and namespace names that Match rules select on
	meta        *runtimeapi.ContainerMetadata
	image       *runtimeapi.ImageSpec
	imageRef    string
	imageID     string
	labels      map[string]string
	annotations map[string]string
	mounts      []*runtimeapi.Mount
	logPath     string
	resources   *runtimeapi.ContainerResources
	stopSignal  runtimeapi.Signal
	user        *runtimeapi.ContainerUser

	state      runtimeapi.ContainerState
	createdAt  int64
	startedAt  int64
	finishedAt int64
	exitCode   int32
	reason     string
	message    string

	script      Script
	terminating bool          // StopContainer has "sent SIGTERM"
	timers      []stopper     // pending exits, cancelled on exit
	exited      chan struct{} // closed when the container reaches EXITED
	usage       ContainerUsage

	output        []logEntry    // what it printed, for attach
	outputChanged chan struct{} // closed (and reset) when output grows; nil until awaited
}

func (c *container) metadata() *runtimeapi.ContainerMetadata {
	return proto.CloneOf(c.meta)
}

func (c *container) running() bool {
	return c.state == runtimeapi.ContainerState_CONTAINER_RUNNING
}

func (c *container) status() *runtimeapi.ContainerStatus {
	mounts := make([]*runtimeapi.Mount, 0, len(c.mounts))
	for _, m := range c.mounts {
		mounts = append(mounts, proto.CloneOf(m))
	}
	var resources *runtimeapi.ContainerResources
	if c.resources != nil {
		resources = proto.CloneOf(c.resources)
	}
	return &runtimeapi.ContainerStatus{
		Id:          c.id,
		Metadata:    c.metadata(),
		State:       c.state,
		CreatedAt:   c.createdAt,
		StartedAt:   c.startedAt,
		FinishedAt:  c.finishedAt,
		ExitCode:    c.exitCode,
		Image:       proto.CloneOf(c.image),
		ImageRef:    c.imageRef,
		ImageId:     c.imageID,
		Reason:      c.reason,
		Message:     c.message,
		Labels:      maps.Clone(c.labels),
		Annotations: maps.Clone(c.annotations),
		Mounts:      mounts,
		LogPath:     c.logPath,
		Resources:   resources,
		StopSignal:  c.stopSignal,
		User:        proto.CloneOf(c.user),
	}
}

func (c *container) item() *runtimeapi.Container {
	return &runtimeapi.Container{
		Id:           c.id,
		PodSandboxId: c.sandboxID,
		Metadata:     c.metadata(),
		Image:        proto.CloneOf(c.image),
		ImageRef:     c.imageRef,
		ImageId:      c.imageID,
		State:        c.state,
		CreatedAt:    c.createdAt,
		Labels:       maps.Clone(c.labels),
		Annotations:  maps.Clone(c.annotations),
	}
}

func (c *container) matches(f *runtimeapi.ContainerFilter) bool {
	if f == nil {
		return true
	}
	if f.Id != "" && f.Id != c.id {
		return false
	}
	if f.PodSandboxId != "" && f.PodSandboxId != c.sandboxID {
		return false
	}
	if f.State != nil && f.State.State != c.state {
		return false
	}
	return matchLabels(c.labels, f.LabelSelector)
}

// containersLocked returns the containers accepted by keep, oldest first.
func (s *Sim) containersLocked(keep func(*container) bool) []*container {
	var out []*container
	for _, c := range s.containers {
		if keep(c) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b *container) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

func (s *Sim) containersOfLocked(sandboxID string) []*container {
	return s.containersLocked(func(c *container) bool { return c.sandboxID == sandboxID })
}

func (s *Sim) containerStatusesLocked(sandboxID string) []*runtimeapi.ContainerStatus {
	var out []*runtimeapi.ContainerStatus
	for _, c := range s.containersOfLocked(sandboxID) {
		out = append(out, c.status())
	}
	return out
}

func (s *Sim) listContainers(f *runtimeapi.ContainerFilter) []*runtimeapi.Container {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*runtimeapi.Container
	for _, c := range s.containersLocked(func(c *container) bool { return c.matches(f) }) {
		out = append(out, c.item())
	}
	return out
}

// exitLocked moves a running container to EXITED at the given instant and
// emits CONTAINER_STOPPED. It is a no-op for containers that are not
// running, which makes racing exits (script, stop, kill) harmless.
func (s *Sim) exitLocked(c *container, at int64, code int32, reason, message string) {
	if !c.running() {
		return
	}
	if reason == "" {
		reason = reasonCompleted
		if code != 0 {
			reason = reasonError
		}
	}
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.finishedAt = at
	c.exitCode = code
	c.reason = reason
	c.message = message
	c.stopTimersLocked()
	close(c.exited)
	s.publishContainerLocked(c, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
}

// scheduleExitLocked makes c exit after d on the injected clock, stamped
// with the scheduled instant.
func (s *Sim) scheduleExitLocked(c *container, d time.Duration, code int32, reason, message string) {
	at := s.clock.Now().Add(d).UnixNano()
	c.timers = append(c.timers, s.afterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.exitLocked(c, at, code, reason, message)
	}))
}

func (c *container) stopTimersLocked() {
	for _, t := range c.timers {
		t.Stop()
	}
	c.timers = nil
}

// removeContainerLocked force-stops c if it runs, deletes it and emits
// CONTAINER_DELETED.
func (s *Sim) removeContainerLocked(c *container) {
	s.exitLocked(c, s.nowNano(), exitCodeKilled, reasonError, "")
	c.stopTimersLocked()
	delete(s.containers, c.id)
	s.publishContainerLocked(c, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
}
