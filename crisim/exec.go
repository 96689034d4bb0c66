package crisim

import (
	"context"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ExecResult is the scripted outcome of an ExecSync call or of a streaming
// Exec session.
type ExecResult struct {
	// Stdout and Stderr are the command's output.
	Stdout string
	Stderr string
	// ExitCode is the command's exit code; cri-client turns a non-zero
	// code into an exec.CodeExitError.
	ExitCode int32
	// Delay is how long, on the injected clock, the command runs. If it
	// exceeds the request timeout the call fails with DeadlineExceeded once
	// the timeout has elapsed.
	Delay time.Duration
	// EchoStdin makes a streaming Exec that has stdin copy it to stdout
	// until the client closes it, before writing Stdout and Stderr (as
	// `cat` would). ExecSync has no stdin and ignores it. An unscripted
	// `cat` without arguments echoes.
	EchoStdin bool
}

type execRule struct {
	match  Match
	prefix []string
	result ExecResult
}

// ScriptExec makes ExecSync in the containers selected by m answer r when
// the command starts with prefix (an empty prefix matches every command).
// When several rules match, the last one registered wins; without any, a
// command succeeds at once with empty output (and a streaming `cat` echoes
// its stdin, see ExecResult.EchoStdin). The rules serve ExecSync and the
// streaming Exec alike.
func (s *Sim) ScriptExec(m Match, prefix []string, r ExecResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.execs = append(s.execs, execRule{match: m, prefix: slices.Clone(prefix), result: r})
}

func (s *Sim) execResultLocked(target Match, cmd []string) ExecResult {
	for i := len(s.execs) - 1; i >= 0; i-- {
		rule := s.execs[i]
		if rule.match.matches(target) && len(cmd) >= len(rule.prefix) && slices.Equal(cmd[:len(rule.prefix)], rule.prefix) {
			return rule.result
		}
	}
	return ExecResult{EchoStdin: slices.Equal(cmd, []string{"cat"})}
}

// runningContainerLocked returns the container id if it is running, and
// NotFound or FailedPrecondition otherwise.
func (s *Sim) runningContainerLocked(id string) (*container, error) {
	c, ok := s.containers[id]
	if !ok {
		return nil, notFound("container", id)
	}
	if !c.running() {
		return nil, precondition("container %q is not running (state %s)", c.id, c.state)
	}
	return c, nil
}

// ExecSync answers with the scripted result for the container and command.
// The container must be running.
func (r *runtimeService) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	s := r.sim
	s.mu.Lock()
	c, err := s.runningContainerLocked(req.ContainerId)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	res := s.execResultLocked(c.target, req.Cmd)
	s.mu.Unlock()

	timeout := time.Duration(req.Timeout) * time.Second
	if timeout > 0 && res.Delay > timeout {
		if err := s.sleep(ctx, timeout); err != nil {
			return nil, err
		}
		return nil, status.Errorf(codes.DeadlineExceeded, "command %q timed out after %s", strings.Join(req.Cmd, " "), timeout)
	}
	if err := s.sleep(ctx, res.Delay); err != nil {
		return nil, err
	}
	return &runtimeapi.ExecSyncResponse{
		Stdout:   []byte(res.Stdout),
		Stderr:   []byte(res.Stderr),
		ExitCode: res.ExitCode,
	}, nil
}
