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

// ExecResult is the scripted outcome of an ExecSync call.
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
}

type execRule struct {
	match  Match
	prefix []string
	result ExecResult
}

// ScriptExec makes ExecSync in the containers selected by m answer r when
// the command starts with prefix (an empty prefix matches every command).
// When several rules match, the last one registered wins; without any, a
// command succeeds at once with empty output.
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
	return ExecResult{}
}

// ExecSync answers with the scripted result for the container and command.
// The container must be running.
func (r *runtimeService) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	s := r.sim
	s.mu.Lock()
	c, ok := s.containers[req.ContainerId]
	if !ok {
		s.mu.Unlock()
		return nil, notFound("container", req.ContainerId)
	}
	if !c.running() {
		s.mu.Unlock()
		return nil, precondition("container %q is not running (state %s)", c.id, c.state)
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
