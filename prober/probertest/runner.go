package probertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	utilexec "k8s.io/utils/exec"

	"github.com/nodekit/nodekit/prober"
)

var _ prober.CommandRunner = (*Runner)(nil)

// ExecFunc answers a command in place of a script; it has the signature of
// prober.CommandRunner's ExecSync. A non-zero exit code is reported as an
// error with an ExitStatus() int method, such as k8s.io/utils/exec's
// CodeExitError.
type ExecFunc func(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error)

// Reply is the scripted answer to a command.
type Reply struct {
	// Stdout and Stderr are the command's output.
	Stdout, Stderr []byte
	// ExitCode is the command's exit code. A non-zero code is returned as
	// a k8s.io/utils/exec.CodeExitError, as cri-client does, which the
	// prober reports as a Failure.
	ExitCode int
	// Err, if set, is returned instead (with no output): the prober treats
	// an error that is neither an exit code nor a timeout as a failed
	// probe run and publishes no result.
	Err error
	// Block makes the command hang until its context ends (the prober ends
	// it at the probe's timeout, on its clock, and reports a Failure) or
	// the command's script changes, which then answers.
	Block bool
}

// Call is one ExecSync call the Runner received.
type Call struct {
	// ContainerID is the bare runtime ID of the container.
	ContainerID string
	// Cmd is the command.
	Cmd []string
	// Timeout is the timeout the caller gave.
	Timeout time.Duration
}

// script is what answers one command.
type script struct {
	reply Reply
	fn    ExecFunc
}

// Runner is a scripted prober.CommandRunner. Commands are keyed by their
// words joined with single spaces ("cat /tmp/healthy"); a command without
// a script exits 0 with no output. The zero value is ready to use.
type Runner struct {
	mu      sync.Mutex
	scripts map[string]script
	calls   []Call
	changed chan struct{} // closed and replaced when a script changes
}

// Set scripts the reply of cmd.
func (r *Runner) Set(cmd string, reply Reply) { r.set(cmd, script{reply: reply}) }

// SetExit makes cmd exit with code, with no output.
func (r *Runner) SetExit(cmd string, code int) { r.Set(cmd, Reply{ExitCode: code}) }

// SetError makes cmd fail with err, as a broken runtime would.
func (r *Runner) SetError(cmd string, err error) { r.Set(cmd, Reply{Err: err}) }

// Block makes cmd hang until its context ends or its script changes (see
// Reply.Block).
func (r *Runner) Block(cmd string) { r.Set(cmd, Reply{Block: true}) }

// SetFunc makes f answer cmd. f is called without the Runner's lock held,
// possibly concurrently; it should honour ctx.
func (r *Runner) SetFunc(cmd string, f ExecFunc) { r.set(cmd, script{fn: f}) }

func (r *Runner) set(cmd string, s script) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.scripts == nil {
		r.scripts = map[string]script{}
	}
	r.scripts[cmd] = s
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// Calls returns the calls received so far, oldest first.
func (r *Runner) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Call, len(r.calls))
	for i, c := range r.calls {
		c.Cmd = slices.Clone(c.Cmd)
		out[i] = c
	}
	return out
}

// ExecSync implements prober.CommandRunner: it records the call and answers
// from cmd's script.
func (r *Runner) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error) {
	key := strings.Join(cmd, " ")
	r.mu.Lock()
	r.calls = append(r.calls, Call{ContainerID: containerID, Cmd: slices.Clone(cmd), Timeout: timeout})
	r.mu.Unlock()
	for {
		r.mu.Lock()
		s := r.scripts[key]
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		changed := r.changed
		r.mu.Unlock()
		switch {
		case s.fn != nil:
			return s.fn(ctx, containerID, cmd, timeout)
		case s.reply.Block:
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return nil, nil, fmt.Errorf("probertest: command %q ended with its context: %w", key, ctx.Err())
			}
		case s.reply.Err != nil:
			return nil, nil, s.reply.Err
		}
		stdout, stderr = slices.Clone(s.reply.Stdout), slices.Clone(s.reply.Stderr)
		if code := s.reply.ExitCode; code != 0 {
			return stdout, stderr, utilexec.CodeExitError{
				Err:  fmt.Errorf("command '%s' exited with %d: %s", key, code, stderr),
				Code: code,
			}
		}
		return stdout, stderr, nil
	}
}
