package crisim

import (
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Match selects containers by their metadata name and by the name and
// namespace of their pod sandbox. Empty fields match anything, so the zero
// Match selects every container.
type Match struct {
	// Container is the container metadata name.
	Container string
	// Pod and Namespace are the pod sandbox metadata name and namespace.
	Pod       string
	Namespace string
}

func (m Match) matches(target Match) bool {
	return (m.Container == "" || m.Container == target.Container) &&
		(m.Pod == "" || m.Pod == target.Pod) &&
		(m.Namespace == "" || m.Namespace == target.Namespace)
}

// Script describes what a simulated container does once started. The zero
// Script runs forever and exits with code 0 as soon as it is stopped.
type Script struct {
	// ExitAfter makes the container exit on its own this long after it
	// started; zero means it runs until stopped.
	ExitAfter time.Duration
	// ExitCode, Reason and Message describe that exit. An empty Reason
	// becomes "Completed" for code 0 and "Error" otherwise.
	ExitCode int32
	Reason   string
	Message  string
	// StartError, if set, is returned by StartContainer and leaves the
	// container EXITED with exit code 128 and reason "StartError".
	StartError error
	// StopDelay is how long the container takes to exit after
	// StopContainer asks it to. If StopDelay is shorter than the stop
	// timeout it exits with TermExitCode after StopDelay; otherwise it is
	// killed with exit code 137 when the timeout expires. A zero StopDelay
	// exits at once (unless the timeout is zero, which kills at once).
	StopDelay time.Duration
	// TermExitCode is the exit code of a graceful stop.
	TermExitCode int32
}

type scriptRule struct {
	match  Match
	script Script
}

// Script makes the containers selected by m follow sc from their next
// StartContainer on. When several rules match, the last one registered wins.
func (s *Sim) Script(m Match, sc Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts = append(s.scripts, scriptRule{match: m, script: sc})
}

func (s *Sim) scriptForLocked(target Match) Script {
	for i := len(s.scripts) - 1; i >= 0; i-- {
		if s.scripts[i].match.matches(target) {
			return s.scripts[i].script
		}
	}
	return Script{}
}

// startLocked moves a CREATED container to RUNNING (or to EXITED if its
// script fails to start) and arms its scripted exit.
func (s *Sim) startLocked(c *container) error {
	sc := s.scriptForLocked(c.target)
	c.script = sc
	now := s.nowNano()
	if sc.StartError != nil {
		c.state = runtimeapi.ContainerState_CONTAINER_EXITED
		c.finishedAt = now
		c.exitCode = exitCodeStartError
		c.reason = reasonStartError
		c.message = sc.StartError.Error()
		close(c.exited)
		s.publishContainerLocked(c, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
		return sc.StartError
	}
	c.state = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.startedAt = now
	s.printLocked(c, time.Unix(0, now), s.logLinesLocked(c.target))
	s.publishContainerLocked(c, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	if sc.ExitAfter > 0 {
		s.scheduleExitLocked(c, sc.ExitAfter, sc.ExitCode, sc.Reason, sc.Message)
	}
	return nil
}

// terminateLocked asks a running container to stop within timeout. The
// first request starts the graceful exit; every request arms a kill at its
// own timeout unless the graceful exit comes first, so a later, shorter
// timeout still shortens the stop, as with real runtimes.
func (s *Sim) terminateLocked(c *container, timeout time.Duration) {
	if !c.running() {
		return
	}
	if timeout <= 0 {
		s.exitLocked(c, s.nowNano(), exitCodeKilled, reasonError, "")
		return
	}
	if !c.terminating {
		c.terminating = true
		delay := c.script.StopDelay
		if delay <= 0 {
			s.exitLocked(c, s.nowNano(), c.script.TermExitCode, "", "")
			return
		}
		if delay < timeout {
			s.scheduleExitLocked(c, delay, c.script.TermExitCode, "", "")
			return
		}
	}
	s.scheduleExitLocked(c, timeout, exitCodeKilled, reasonError, "")
}

// ExitContainer makes a running container exit now with the given code and
// reason (for instance 137 and "OOMKilled"). An empty reason becomes
// "Completed" or "Error" depending on the code.
func (s *Sim) ExitContainer(id string, code int32, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[id]
	if !ok {
		return notFound("container", id)
	}
	if !c.running() {
		return precondition("container %q is not running", id)
	}
	s.exitLocked(c, s.nowNano(), code, reason, "")
	return nil
}
