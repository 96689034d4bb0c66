package simulated

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	utilexec "k8s.io/utils/exec"

	"github.com/nodekit/nodekit/kubeletapi"
)

// logTimeFormat is the kubelet's timestamp of a log line (RFC 3339 with
// nanoseconds, fixed width).
const logTimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// exitCodeNotFound is the shell's exit code of an unknown command.
const exitCodeNotFound = 127

// simLine is one line of a simulated container's log.
type simLine struct {
	t    time.Time
	text string
}

// simRun is one run of a simulated container: it started at start and,
// unless end is zero, ended at end with code.
type simRun struct {
	start, end time.Time
	code       int32
}

// simLog is the pure log of a container run: "started container <name>",
// the lines of AnnotationLog, both at the start, and "container <name>
// exited with code <code>" at the end.
func simLog(pod *v1.Pod, container string, r simRun) []simLine {
	lines := []simLine{{r.start, "started container " + container}}
	if v := strings.TrimSuffix(pod.Annotations[AnnotationLog], "\n"); v != "" {
		for l := range strings.SplitSeq(v, "\n") {
			lines = append(lines, simLine{r.start, l})
		}
	}
	if !r.end.IsZero() {
		lines = append(lines, simLine{r.end, fmt.Sprintf("container %s exited with code %d", container, r.code)})
	}
	return lines
}

// containerRun returns the run of a container of pod: from the simulator's
// record, or, for a pod it has forgotten (finished), from the container's
// status in pod. It returns an error when the container has not run, and
// the record of a pod whose containers still run (nil otherwise).
func (s *Provider) containerRun(pod *v1.Pod, container string) (simRun, *simPod, error) {
	init := false
	switch {
	case hasContainer(pod.Spec.Containers, container):
	case hasContainer(pod.Spec.InitContainers, container):
		init = true
	default:
		return simRun{}, nil, fmt.Errorf("container %q in pod %q is not run by the simulated provider", container, pod.Name)
	}
	s.mu.Lock()
	p, ok := s.pods[pod.UID]
	s.mu.Unlock()
	if !ok {
		r, err := runFromStatus(pod, container, init)
		return r, nil, err
	}
	r, running, err := s.recordRun(pod, container, init, p)
	if !running {
		p = nil
	}
	return r, p, err
}

// recordRun returns the run of a container from the simulator's record of
// its pod (kept after ForgetPod by those who hold it), and whether it still
// runs.
func (s *Provider) recordRun(pod *v1.Pod, container string, init bool, p *simPod) (simRun, bool, error) {
	s.mu.Lock()
	snap := *p
	now := s.cfg.Clock.Now()
	s.mu.Unlock()
	running, end, code := snap.outcome(now)
	switch {
	case !running && end.IsZero():
		reason := reasonCreating
		if init || len(pod.Spec.InitContainers) > 0 {
			reason = reasonPodInit
		}
		return simRun{}, false, waitingError(pod, container, reason)
	case !running:
		return simRun{}, false, fmt.Errorf("container %q in pod %q was stopped before it started", container, pod.Name)
	case init: // ran from creation to readyAt
		return simRun{start: snap.created.time(), end: snap.readyAt.time()}, false, nil
	case !end.IsZero():
		return simRun{start: snap.readyAt.time(), end: end, code: code}, false, nil
	}
	return simRun{start: snap.readyAt.time()}, true, nil
}

// runFromStatus rebuilds a container's run from its status (whole
// seconds), for a pod the simulator no longer knows.
func runFromStatus(pod *v1.Pod, container string, init bool) (simRun, error) {
	statuses := pod.Status.ContainerStatuses
	if init {
		statuses = pod.Status.InitContainerStatuses
	}
	for _, cs := range statuses {
		if cs.Name != container {
			continue
		}
		switch {
		case cs.State.Terminated != nil && cs.ContainerID != "":
			t := cs.State.Terminated
			return simRun{start: t.StartedAt.Time, end: t.FinishedAt.Time, code: t.ExitCode}, nil
		case cs.State.Terminated != nil:
			return simRun{}, fmt.Errorf("container %q in pod %q was stopped before it started", container, pod.Name)
		case cs.State.Waiting != nil:
			return simRun{}, waitingError(pod, container, cs.State.Waiting.Reason)
		}
	}
	return simRun{}, waitingError(pod, container, reasonCreating)
}

// waitingError is the kubelet's answer for the log of a container that has
// not started.
func waitingError(pod *v1.Pod, container, reason string) error {
	return fmt.Errorf("container %q in pod %q is waiting to start: %s", container, pod.Name, reason)
}

func hasContainer(cs []v1.Container, name string) bool {
	for i := range cs {
		if cs[i].Name == name {
			return true
		}
	}
	return false
}

// ContainerLogs implements virtualnode.LogProvider: the container's log is
// "started container <name>" and the lines of AnnotationLog when it
// started, then "container <name> exited with code <code>" when it ended,
// all on stdout. A pod the simulator has forgotten (finished) keeps its log,
// rebuilt from the container status. Containers do not restart, so there is
// no previous log.
func (s *Provider) ContainerLogs(ctx context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions, stdout, stderr io.Writer) error {
	if opts.Previous {
		return fmt.Errorf("previous terminated container %q in pod %q not found", container, pod.Name)
	}
	run, rec, err := s.containerRun(pod, container)
	if err != nil {
		return err
	}
	lw := &simLogWriter{w: stdout, timestamps: opts.Timestamps, limit: -1}
	if opts.LimitBytes != nil {
		lw.limit = *opts.LimitBytes
	}
	switch {
	case opts.SinceTime != nil:
		lw.since = opts.SinceTime.Time
	case opts.SinceSeconds != nil:
		lw.since = s.cfg.Clock.Now().Add(-time.Duration(*opts.SinceSeconds) * time.Second)
	}
	lines := simLog(pod, container, run)
	shown := lw.filter(lines)
	if opts.TailLines != nil && int64(len(shown)) > *opts.TailLines {
		shown = shown[int64(len(shown))-*opts.TailLines:]
	}
	lw.write(shown)
	if !opts.Follow || rec == nil || lw.full() {
		return nil
	}
	// Send the headers now: a quiet follow is not a hung server.
	if stdout != nil {
		_, _ = stdout.Write(nil)
	} else if stderr != nil {
		_, _ = stderr.Write(nil)
	}
	select {
	case <-s.endedChan(rec):
	case <-ctx.Done():
		return nil
	}
	if run, _, err = s.recordRun(pod, container, false, rec); err == nil {
		if all := simLog(pod, container, run); len(all) > len(lines) {
			lw.write(lw.filter(all[len(lines):]))
		}
	}
	return nil
}

// simLogWriter writes log lines with the kubelet's options: since,
// timestamps, and a byte limit (negative: none) that may cut a line.
type simLogWriter struct {
	w          io.Writer // nil: the stream was not requested
	timestamps bool
	since      time.Time
	limit      int64
}

func (lw *simLogWriter) filter(lines []simLine) []simLine {
	out := make([]simLine, 0, len(lines))
	for _, l := range lines {
		if !l.t.Before(lw.since) {
			out = append(out, l)
		}
	}
	return out
}

func (lw *simLogWriter) full() bool { return lw.limit == 0 }

func (lw *simLogWriter) write(lines []simLine) {
	if lw.w == nil {
		return
	}
	var b strings.Builder
	for _, l := range lines {
		if lw.timestamps {
			b.WriteString(l.t.UTC().Format(logTimeFormat))
			b.WriteByte(' ')
		}
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	out := b.String()
	if lw.limit >= 0 && int64(len(out)) > lw.limit {
		out = out[:lw.limit]
	}
	if lw.limit > 0 {
		lw.limit -= int64(len(out))
	}
	if out != "" {
		_, _ = io.WriteString(lw.w, out)
	}
}

// Exec implements virtualnode.ExecProvider with a few built-in commands, run in a
// running container of a pod the simulator knows: "echo ARGS", "hostname"
// (spec.hostname, else the pod's name), "env" (HOSTNAME and the container's
// literal env values), "cat" (stdin to stdout), "true" and "false". Others
// print "<cmd>: command not found" on stderr and exit 127. A directory in the
// command's name is ignored (/bin/true is true).
func (s *Provider) Exec(_ context.Context, pod *v1.Pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, _ <-chan kubeletapi.TerminalSize) error {
	if !hasContainer(pod.Spec.Containers, container) {
		return fmt.Errorf("container %q not found in pod %q", container, pod.Name)
	}
	s.mu.Lock()
	p, ok := s.pods[pod.UID]
	running := false
	if ok {
		var end time.Time
		running, end, _ = p.outcome(s.cfg.Clock.Now())
		running = running && end.IsZero()
	}
	s.mu.Unlock()
	if !running {
		return fmt.Errorf("container %q in pod %q is not running", container, pod.Name)
	}
	if len(cmd) == 0 {
		return errors.New("no command")
	}
	var out, errOut io.Writer = io.Discard, io.Discard
	if stdout != nil {
		out = stdout
	}
	switch {
	case stderr != nil:
		errOut = stderr
	case tty: // one stream for both
		errOut = out
	}
	switch name, args := path.Base(cmd[0]), cmd[1:]; name {
	case "echo":
		_, _ = fmt.Fprintln(out, strings.Join(args, " "))
	case "hostname":
		_, _ = fmt.Fprintln(out, podHostname(pod))
	case "env":
		_, _ = fmt.Fprintf(out, "HOSTNAME=%s\n", podHostname(pod))
		for _, c := range pod.Spec.Containers {
			if c.Name != container {
				continue
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					_, _ = fmt.Fprintf(out, "%s=%s\n", e.Name, e.Value)
				}
			}
		}
	case "cat":
		if stdin != nil {
			_, _ = io.Copy(out, stdin)
		}
	case "true":
	case "false":
		return utilexec.CodeExitError{Err: errors.New("exit status 1"), Code: 1}
	default:
		_, _ = fmt.Fprintf(errOut, "%s: command not found\n", cmd[0])
		return utilexec.CodeExitError{Err: fmt.Errorf("exit status %d", exitCodeNotFound), Code: exitCodeNotFound}
	}
	return nil
}

func podHostname(pod *v1.Pod) string {
	if pod.Spec.Hostname != "" {
		return pod.Spec.Hostname
	}
	return pod.Name
}

// Attach implements virtualnode.ExecProvider: simulated containers have no process to
// attach to.
func (s *Provider) Attach(context.Context, *v1.Pod, string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan kubeletapi.TerminalSize) error {
	return errors.New("attaching is not supported by the simulated provider")
}

// PortForward implements virtualnode.ExecProvider: simulated containers listen on no
// port.
func (s *Provider) PortForward(context.Context, *v1.Pod, int32, io.ReadWriteCloser) error {
	return errors.New("port forwarding is not supported by the simulated provider")
}
