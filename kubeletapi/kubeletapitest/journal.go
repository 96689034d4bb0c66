package kubeletapitest

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sync"

	"github.com/nodekit/nodekit/kubeletapi"
)

var (
	_ kubeletapi.Journal       = (*Journal)(nil)
	_ kubeletapi.CommandRunner = (*CommandRunner)(nil)
)

// ExitError is the error of a program that exited with Code: it has the
// ExitCode method kubeletapi looks for, as *exec.ExitError has.
type ExitError struct{ Code int }

// Error implements error.
func (e *ExitError) Error() string {
	if e.Code < 0 {
		return "signal: killed"
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// ExitCode returns Code.
func (e *ExitError) ExitCode() int { return e.Code }

// CommandCall records one command a CommandRunner ran.
type CommandCall struct {
	// Name is the program.
	Name string
	// Args are its arguments.
	Args []string
}

type cannedCommand struct {
	prefix         []string
	stdout, stderr string
	err            error
	hang           bool
}

// CommandRunner runs canned commands: each writes the output set for the
// longest prefix of its name and arguments. A command that matches no
// prefix fails as a program that is not installed (exec.ErrNotFound).
type CommandRunner struct {
	mu      sync.Mutex
	cmds    []cannedCommand
	calls   []CommandCall
	running int
}

// Set makes the commands whose name and arguments start with prefix write
// stdout and stderr and return err (nil: success). Setting a prefix again
// replaces it.
func (r *CommandRunner) Set(prefix []string, stdout, stderr string, err error) {
	r.set(cannedCommand{prefix: slices.Clone(prefix), stdout: stdout, stderr: stderr, err: err})
}

// Hang makes the commands whose name and arguments start with prefix write
// stdout, then run until their context is done and return as a program
// killed then: an ExitError with Code -1 (exec's "signal: killed").
func (r *CommandRunner) Hang(prefix []string, stdout string) {
	r.set(cannedCommand{prefix: slices.Clone(prefix), stdout: stdout, hang: true})
}

func (r *CommandRunner) set(c cannedCommand) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cmds = slices.DeleteFunc(r.cmds, func(o cannedCommand) bool { return slices.Equal(o.prefix, c.prefix) })
	r.cmds = append(r.cmds, c)
}

// Calls returns the commands run so far, oldest first.
func (r *CommandRunner) Calls() []CommandCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// Running returns how many commands are running now (hanging ones).
func (r *CommandRunner) Running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running
}

// Run implements kubeletapi.CommandRunner.
func (r *CommandRunner) Run(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error {
	line := append([]string{name}, args...)
	r.mu.Lock()
	r.calls = append(r.calls, CommandCall{Name: name, Args: slices.Clone(args)})
	var match *cannedCommand
	for i := range r.cmds {
		c := &r.cmds[i]
		if len(c.prefix) <= len(line) && slices.Equal(c.prefix, line[:len(c.prefix)]) &&
			(match == nil || len(c.prefix) > len(match.prefix)) {
			match = c
		}
	}
	var c cannedCommand
	if match != nil {
		c = *match
	}
	if c.hang {
		r.running++
	}
	r.mu.Unlock()
	if match == nil {
		return &exec.Error{Name: name, Err: exec.ErrNotFound}
	}
	if _, err := io.WriteString(stdout, c.stdout); err != nil {
		return err
	}
	if c.stderr != "" {
		if _, err := io.WriteString(stderr, c.stderr); err != nil {
			return err
		}
	}
	if c.hang {
		<-ctx.Done()
		r.mu.Lock()
		r.running--
		r.mu.Unlock()
		return &ExitError{Code: -1}
	}
	return c.err
}

// JournalCall records one Journal.Copy call.
type JournalCall struct {
	// Services are the services asked for.
	Services []string
	// Options are the query's options.
	Options kubeletapi.JournalOptions
}

// Journal is a Journal with settable units and entries.
type Journal struct {
	mu       sync.Mutex
	units    []string
	unitsErr error
	entries  string
	copyErr  error
	calls    []JournalCall
}

// SetUnits sets what Units returns.
func (j *Journal) SetUnits(units []string, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.units, j.unitsErr = slices.Clone(units), err
}

// SetEntries sets what Copy writes, whatever the services and options,
// and returns.
func (j *Journal) SetEntries(text string, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries, j.copyErr = text, err
}

// Calls returns the Copy calls made so far, oldest first.
func (j *Journal) Calls() []JournalCall {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.calls)
}

// Units implements kubeletapi.Journal.
func (j *Journal) Units(context.Context) ([]string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.units), j.unitsErr
}

// Copy implements kubeletapi.Journal.
func (j *Journal) Copy(_ context.Context, w io.Writer, services []string, opts kubeletapi.JournalOptions) error {
	j.mu.Lock()
	j.calls = append(j.calls, JournalCall{Services: slices.Clone(services), Options: opts})
	entries, err := j.entries, j.copyErr
	j.mu.Unlock()
	if _, werr := io.WriteString(w, entries); werr != nil {
		return werr
	}
	return err
}
