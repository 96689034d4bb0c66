package kubeletapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// CommandRunner runs a program to completion, its standard output and
// error to the writers (one writer given twice gets one write at a time).
// Run stops the program when ctx is done. It returns nil when the program
// exits with status 0, an error with an `ExitCode() int` method (as
// *exec.ExitError) when it exits otherwise, and any other error when it
// cannot be run (not installed). It may be called concurrently.
type CommandRunner interface {
	Run(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error
}

// ExecRunner is the CommandRunner of os/exec: the program runs in the
// agent's environment, and is killed when ctx is done.
type ExecRunner struct{}

// execWaitDelay bounds the wait for the output of a program killed at the
// end of its context (a child holding its pipes).
const execWaitDelay = 5 * time.Second

// Run runs name with args.
func (ExecRunner) Run(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = execWaitDelay
	return cmd.Run()
}

// Journalctl is the Journal of systemd's journalctl, run as the kubelet
// runs it (--utc --no-pager --output=short-precise, --unit per service,
// --since/--until, --pager-end --lines, --grep, --boot). Its zero value
// runs "journalctl" from PATH with ExecRunner.
type Journalctl struct {
	// Path is the journalctl program. Default "journalctl", looked up in
	// PATH.
	Path string
	// Runner runs it. Default ExecRunner{}.
	Runner CommandRunner
}

var _ Journal = (*Journalctl)(nil)

func (j *Journalctl) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	path, runner := j.Path, j.Runner
	if path == "" {
		path = "journalctl"
	}
	if runner == nil {
		runner = ExecRunner{}
	}
	return runner.Run(ctx, path, args, stdout, stderr)
}

// Units lists the journal's _SYSTEMD_UNIT values, one a line of
// `journalctl --field _SYSTEMD_UNIT` (its standard error included, as the
// kubelet reads it).
func (j *Journalctl) Units(ctx context.Context) ([]string, error) {
	var out bytes.Buffer
	if err := j.run(ctx, []string{"--field", "_SYSTEMD_UNIT"}, &out, &out); err != nil {
		return nil, fmt.Errorf("kubeletapi: journalctl --field _SYSTEMD_UNIT: %w", err)
	}
	return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"), nil
}

// Copy runs journalctl for services with opts, its output to w.
func (j *Journalctl) Copy(ctx context.Context, w io.Writer, services []string, opts JournalOptions) error {
	return j.run(ctx, JournalctlArgs(services, opts), w, w)
}

// JournalctlArgs returns journalctl's arguments for the entries of
// services that opts select, as the kubelet builds them (getLoggingCmd).
func JournalctlArgs(services []string, opts JournalOptions) []string {
	args := []string{"--utc", "--no-pager", "--output=short-precise"}
	if opts.SinceTime != nil {
		args = append(args, "--since="+opts.SinceTime.Format(journalDateLayout))
	}
	if opts.UntilTime != nil {
		args = append(args, "--until="+opts.UntilTime.Format(journalDateLayout))
	}
	if opts.TailLines != nil {
		args = append(args, "--pager-end", fmt.Sprintf("--lines=%d", *opts.TailLines))
	}
	for _, service := range services {
		if service != "" {
			args = append(args, "--unit="+service)
		}
	}
	if opts.Pattern != "" {
		args = append(args, "--grep="+opts.Pattern)
	}
	if opts.Boot != nil {
		args = append(args, "--boot", fmt.Sprintf("%d", *opts.Boot))
	}
	return args
}
