// Package kubeletapitest provides in-memory fakes of the interfaces
// package kubeletapi accepts (PodLister, LogSource, Streamer, Runner,
// SummaryProvider, Journal and CommandRunner), with the controls tests
// need: settable pods, canned logs that can be followed and appended to,
// canned commands, recorded calls, and injected errors. Every fake is safe for concurrent use and its zero value is ready
// to use.
package kubeletapitest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit/nodekit/kubeletapi"
)

var (
	_ kubeletapi.PodLister       = (*PodLister)(nil)
	_ kubeletapi.LogSource       = (*LogSource)(nil)
	_ kubeletapi.Streamer        = (*Streamer)(nil)
	_ kubeletapi.Runner          = (*Runner)(nil)
	_ kubeletapi.SummaryProvider = (*SummaryProvider)(nil)
)

// PodLister is a settable set of pods keyed by namespace and name. Pods
// are stored as deep copies; the pods it returns must not be mutated.
type PodLister struct {
	mu    sync.Mutex
	pods  map[types.NamespacedName]*v1.Pod
	calls int
}

// Calls returns how many times GetPodByName and GetPods were called.
func (l *PodLister) Calls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// NewPodLister returns a PodLister holding pods.
func NewPodLister(pods ...*v1.Pod) *PodLister {
	l := &PodLister{}
	l.Set(pods...)
	return l
}

// Set replaces every pod with pods.
func (l *PodLister) Set(pods ...*v1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pods = make(map[types.NamespacedName]*v1.Pod, len(pods))
	for _, p := range pods {
		l.pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p.DeepCopy()
	}
}

// Add adds pod, or replaces the pod with its namespace and name.
func (l *PodLister) Add(pod *v1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pods == nil {
		l.pods = map[types.NamespacedName]*v1.Pod{}
	}
	l.pods[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = pod.DeepCopy()
}

// Delete removes the pod with that namespace and name, if any.
func (l *PodLister) Delete(namespace, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.pods, types.NamespacedName{Namespace: namespace, Name: name})
}

// GetPodByName implements kubeletapi.PodLister.
func (l *PodLister) GetPodByName(namespace, name string) (*v1.Pod, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	p, ok := l.pods[types.NamespacedName{Namespace: namespace, Name: name}]
	return p, ok
}

// GetPods implements kubeletapi.PodLister. Pods are sorted by namespace
// and name.
func (l *PodLister) GetPods() []*v1.Pod {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	out := make([]*v1.Pod, 0, len(l.pods))
	for _, p := range l.pods {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *v1.Pod) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Line is one canned log line of a container.
type Line struct {
	// Stderr marks a line of the container's stderr; otherwise it is
	// stdout's.
	Stderr bool
	// Text is the line without its newline (added when written).
	Text string
	// Time is the line's timestamp: written before the text (RFC3339Nano
	// and a space) with the timestamps option, and compared with sinceTime.
	Time time.Time
}

// Stdout returns stdout lines with the given texts and zero times.
func Stdout(texts ...string) []Line {
	out := make([]Line, 0, len(texts))
	for _, t := range texts {
		out = append(out, Line{Text: t})
	}
	return out
}

// Stderr returns stderr lines with the given texts and zero times.
func Stderr(texts ...string) []Line {
	out := Stdout(texts...)
	for i := range out {
		out[i].Stderr = true
	}
	return out
}

// LogCall records one ContainerLogs call.
type LogCall struct {
	// Pod is the pod's namespace and name.
	Pod types.NamespacedName
	// Container is the requested container.
	Container string
	// Options is a copy of the options it was called with.
	Options v1.PodLogOptions
	// Stdout and Stderr tell which writers were given (not nil).
	Stdout, Stderr bool
}

// containerLog is the canned log of one container.
type containerLog struct {
	lines  []Line
	closed bool  // the container stopped: follows end
	err    error // returned before anything is written
}

type logKey struct{ namespace, pod, container string }

// LogSource serves canned per-container logs. ContainerLogs applies
// tailLines, limitBytes, timestamps and sinceTime (sinceSeconds is only
// recorded), writes each line to the writer of its stream if that writer
// is not nil, and with follow then waits for Append (written as it
// arrives), Close (returns nil) or the end of ctx (returns ctx.Err()). A
// container without a log set answers the kubelet's "is not available"
// error.
type LogSource struct {
	mu        sync.Mutex
	logs      map[logKey]*containerLog
	calls     []LogCall
	followers int
	changed   chan struct{} // closed and replaced on every change
}

// log returns the entry of the container, creating it. mu must be held.
func (s *LogSource) log(namespace, pod, container string) *containerLog {
	if s.logs == nil {
		s.logs = map[logKey]*containerLog{}
	}
	k := logKey{namespace, pod, container}
	l, ok := s.logs[k]
	if !ok {
		l = &containerLog{}
		s.logs[k] = l
	}
	return l
}

// notify wakes every follower. mu must be held.
func (s *LogSource) notify() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// SetLines replaces the log of the container with lines and reopens it
// (follows wait again), clearing any error set.
func (s *LogSource) SetLines(namespace, pod, container string, lines ...Line) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.log(namespace, pod, container) = containerLog{lines: slices.Clone(lines)}
	s.notify()
}

// Append adds lines to the log of the container; followers write them.
func (s *LogSource) Append(namespace, pod, container string, lines ...Line) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.log(namespace, pod, container)
	l.lines = append(l.lines, lines...)
	s.notify()
}

// Close marks the container as stopped: its follows write what is left
// and return nil, and later follows return once the log is written.
func (s *LogSource) Close(namespace, pod, container string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log(namespace, pod, container).closed = true
	s.notify()
}

// SetError makes ContainerLogs of the container return err before writing
// anything (nil clears it).
func (s *LogSource) SetError(namespace, pod, container string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log(namespace, pod, container).err = err
	s.notify()
}

// Calls returns the calls made so far, oldest first.
func (s *LogSource) Calls() []LogCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Followers returns how many calls are waiting for more log (following).
func (s *LogSource) Followers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.followers
}

// ContainerLogs implements kubeletapi.LogSource.
func (s *LogSource) ContainerLogs(ctx context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions, stdout, stderr io.Writer) error {
	s.mu.Lock()
	s.calls = append(s.calls, LogCall{
		Pod:       types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name},
		Container: container, Options: *opts.DeepCopy(), Stdout: stdout != nil, Stderr: stderr != nil,
	})
	l, ok := s.logs[logKey{pod.Namespace, pod.Name, container}]
	if !ok {
		s.mu.Unlock()
		return fmt.Errorf("container %q in pod %q is not available", container, pod.Name)
	}
	if l.err != nil {
		err := l.err
		s.mu.Unlock()
		return err
	}
	lines := slices.Clone(l.lines)
	s.mu.Unlock()

	// An empty write sends the headers before a follow blocks, as the
	// kubelet does.
	for _, w := range []io.Writer{stdout, stderr} {
		if w != nil {
			if _, err := w.Write(nil); err != nil {
				return err
			}
			break
		}
	}
	lw := &lineWriter{stdout: stdout, stderr: stderr, opts: opts, remain: -1}
	if opts.LimitBytes != nil {
		lw.remain = *opts.LimitBytes
	}
	start := 0
	if opts.TailLines != nil && int(*opts.TailLines) < len(lines) {
		start = len(lines) - int(*opts.TailLines)
	}
	done, err := lw.write(lines[start:])
	if done || err != nil || !opts.Follow {
		return err
	}
	next := len(lines)
	for {
		s.mu.Lock()
		l := s.log(pod.Namespace, pod.Name, container)
		lines, closed := slices.Clone(l.lines[min(next, len(l.lines)):]), l.closed
		next = len(l.lines)
		var changed chan struct{}
		if len(lines) == 0 && !closed {
			if s.changed == nil {
				s.changed = make(chan struct{})
			}
			changed = s.changed
			s.followers++
		}
		s.mu.Unlock()

		if changed != nil {
			select {
			case <-changed:
			case <-ctx.Done():
			}
			s.mu.Lock()
			s.followers--
			s.mu.Unlock()
			if err := ctx.Err(); err != nil {
				return err
			}
			continue
		}
		if done, err := lw.write(lines); done || err != nil {
			return err
		}
		if closed {
			return nil
		}
	}
}

// lineWriter writes lines with the options that apply to each line.
type lineWriter struct {
	stdout, stderr io.Writer
	opts           *v1.PodLogOptions
	remain         int64 // bytes left under limitBytes; -1: no limit
}

// write writes lines and reports whether limitBytes was reached.
func (w *lineWriter) write(lines []Line) (bool, error) {
	for _, l := range lines {
		if w.opts.SinceTime != nil && l.Time.Before(w.opts.SinceTime.Time) {
			continue
		}
		out := w.stdout
		if l.Stderr {
			out = w.stderr
		}
		if out == nil {
			continue
		}
		b := []byte(l.Text + "\n")
		if w.opts.Timestamps {
			b = append([]byte(l.Time.UTC().Format(time.RFC3339Nano)+" "), b...)
		}
		if w.remain >= 0 && int64(len(b)) > w.remain {
			b = b[:w.remain]
		}
		if _, err := out.Write(b); err != nil {
			return true, err
		}
		if w.remain >= 0 {
			w.remain -= int64(len(b))
			if w.remain == 0 {
				return true, nil
			}
		}
	}
	return false, nil
}

// StreamCall records one Exec, Attach or PortForward call.
type StreamCall struct {
	// Method is "Exec", "Attach" or "PortForward".
	Method string
	// Pod is the pod the call was for.
	Pod *v1.Pod
	// Container is the requested container (empty for PortForward).
	Container string
	// Cmd is the exec command.
	Cmd []string
	// Options are the requested streams (Exec and Attach).
	Options kubeletapi.StreamOptions
	// Ports are the requested ports (PortForward).
	Ports []int32
}

// Streamer records its calls and returns the handler or the error set.
// Without a handler set it returns one that answers 200 "ok".
type Streamer struct {
	mu      sync.Mutex
	handler http.Handler
	err     error
	calls   []StreamCall
}

// SetHandler sets the handler every call returns (nil: the default).
func (s *Streamer) SetHandler(h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
}

// SetError makes every call return err (nil clears it); a
// *kubeletapi.StatusError keeps its code.
func (s *Streamer) SetError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// Calls returns the calls made so far, oldest first.
func (s *Streamer) Calls() []StreamCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

func (s *Streamer) record(c StreamCall) (http.Handler, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	if s.err != nil {
		return nil, s.err
	}
	if s.handler != nil {
		return s.handler, nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }), nil
}

// Exec implements kubeletapi.Streamer.
func (s *Streamer) Exec(_ context.Context, pod *v1.Pod, container string, cmd []string, opts kubeletapi.StreamOptions) (http.Handler, error) {
	return s.record(StreamCall{Method: "Exec", Pod: pod, Container: container, Cmd: slices.Clone(cmd), Options: opts})
}

// Attach implements kubeletapi.Streamer.
func (s *Streamer) Attach(_ context.Context, pod *v1.Pod, container string, opts kubeletapi.StreamOptions) (http.Handler, error) {
	return s.record(StreamCall{Method: "Attach", Pod: pod, Container: container, Options: opts})
}

// PortForward implements kubeletapi.Streamer.
func (s *Streamer) PortForward(_ context.Context, pod *v1.Pod, ports []int32) (http.Handler, error) {
	return s.record(StreamCall{Method: "PortForward", Pod: pod, Ports: slices.Clone(ports)})
}

// RunCall records one RunInContainer call.
type RunCall struct {
	// Pod is the pod's namespace and name.
	Pod types.NamespacedName
	// Container is the requested container.
	Container string
	// Cmd is the command.
	Cmd []string
}

// Runner returns canned output and records its calls.
type Runner struct {
	mu    sync.Mutex
	out   []byte
	err   error
	calls []RunCall
}

// SetOutput sets what every call returns.
func (r *Runner) SetOutput(out []byte, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out, r.err = slices.Clone(out), err
}

// Calls returns the calls made so far, oldest first.
func (r *Runner) Calls() []RunCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// RunInContainer implements kubeletapi.Runner.
func (r *Runner) RunInContainer(_ context.Context, pod *v1.Pod, container string, cmd []string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, RunCall{
		Pod: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, Container: container, Cmd: slices.Clone(cmd),
	})
	return slices.Clone(r.out), r.err
}

// SummaryProvider returns a settable summary or error. The summary is
// returned as set, not copied: callers must not mutate it.
type SummaryProvider struct {
	mu      sync.Mutex
	summary *statsapi.Summary
	err     error
	calls   int
}

// Set sets the summary Get returns and clears the error.
func (p *SummaryProvider) Set(s *statsapi.Summary) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.summary, p.err = s, nil
}

// SetError makes Get fail with err (nil clears it).
func (p *SummaryProvider) SetError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
}

// Calls returns how many times Get was called.
func (p *SummaryProvider) Calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// Get implements kubeletapi.SummaryProvider. Without a summary set it
// returns an empty one.
func (p *SummaryProvider) Get(context.Context) (*statsapi.Summary, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.err != nil {
		return nil, p.err
	}
	if p.summary == nil {
		return &statsapi.Summary{}, nil
	}
	return p.summary, nil
}
