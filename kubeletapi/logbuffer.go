package kubeletapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// DefaultLogBufferMaxBytes is the default of
// LogBufferConfig.MaxBytesPerContainer: the kubelet's containerLogMaxSize
// (10Mi).
const DefaultLogBufferMaxBytes = 10 << 20

// ErrLogClosed is returned by the writers of a container instance whose
// log has ended: Close, a later Start of the same container, or Remove.
var ErrLogClosed = errors.New("kubeletapi: container log closed")

// LogBufferConfig configures a LogBuffer. Zero values mean the defaults.
type LogBufferConfig struct {
	// Clock stamps each line when it is written and turns sinceSeconds
	// into a time. Default the real clock.
	Clock clock.PassiveClock
	// MaxBytesPerContainer bounds the memory kept for each instance of a
	// container: each line counts its bytes, its newline and 64 bytes for
	// its time and bookkeeping (about what a CRI log file spends on a
	// line's timestamp and tags). Past it the oldest lines are dropped, as
	// log rotation drops old files; a single line that does not fit alone
	// keeps its start. Default 10 MiB (the kubelet's containerLogMaxSize);
	// must not be negative.
	MaxBytesPerContainer int64
}

// LogBuffer keeps the output of in-process containers (goroutines,
// virtual nodes' remote workloads) in memory and serves it as a
// LogSource, with the kubelet's log options.
//
// The host calls Start when a container (re)starts and writes its output
// to the returned writers, Close when it exits, and Remove when the pod is
// gone. Each instance is keyed by pod UID and container name; the instance
// before the current one is kept for previous=true, as the kubelet keeps
// the last dead container. Memory is bounded by about
// MaxBytesPerContainer for each of the two instances of every container
// the buffer knows, until Remove.
//
// Every method, and the writers Start returns, may be called concurrently.
// No method blocks except ContainerLogs, and that only while it writes or
// follows.
type LogBuffer struct {
	clock clock.PassiveClock
	max   int64

	mu   sync.Mutex
	pods map[types.UID]map[string]*containerLogs
}

var _ LogSource = (*LogBuffer)(nil)

// containerLogs are the kept instances of one container.
type containerLogs struct {
	current, previous *logInstance
}

// logLineOverhead is what a line counts toward MaxBytesPerContainer
// beyond its text and newline.
const logLineOverhead = 64

// logLine is one line of a log, without its newline. Its text is never
// modified once appended, so readers may use it outside the lock.
type logLine struct {
	t      time.Time
	stderr bool
	text   []byte
}

// cost is what l counts toward MaxBytesPerContainer.
func (l *logLine) cost() int64 { return int64(len(l.text)) + 1 + logLineOverhead }

// logInstance is the log of one run of a container. Its fields are
// guarded by LogBuffer.mu.
type logInstance struct {
	lines   lineRing // the kept lines, oldest first
	first   int64    // sequence number of the oldest kept line; they never repeat
	size    int64    // the lines' cost
	dropped int64    // bytes of text and newlines dropped to stay within the limit
	ended   bool
	changed chan struct{} // made by a waiting follower, closed on every change
}

// NewLogBuffer returns an empty LogBuffer for cfg.
func NewLogBuffer(cfg LogBufferConfig) (*LogBuffer, error) {
	if cfg.MaxBytesPerContainer < 0 {
		return nil, fmt.Errorf("%w: LogBufferConfig.MaxBytesPerContainer %d must not be negative", ErrInvalidConfig, cfg.MaxBytesPerContainer)
	}
	if cfg.MaxBytesPerContainer == 0 {
		cfg.MaxBytesPerContainer = DefaultLogBufferMaxBytes
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &LogBuffer{clock: cfg.Clock, max: cfg.MaxBytesPerContainer, pods: map[types.UID]map[string]*containerLogs{}}, nil
}

// Start begins a new, empty instance of the container and returns the
// writers of its stdout and stderr. The current instance, if any, ends
// (its followers return after its last line) and becomes the previous one;
// the one before is forgotten.
//
// Each Write appends the lines of p, stamped with the clock's time: p is
// split at '\n', a final '\n' ends the last line, and a final fragment
// without one is a line of its own (write whole lines, as log.Logger and
// fmt.Fprintln do). The writers do not keep p. Once the instance has ended
// they return ErrLogClosed.
func (b *LogBuffer) Start(podUID types.UID, container string) (stdout, stderr io.Writer) {
	in := &logInstance{}
	b.mu.Lock()
	defer b.mu.Unlock()
	cs := b.pods[podUID]
	if cs == nil {
		cs = map[string]*containerLogs{}
		b.pods[podUID] = cs
	}
	c := cs[container]
	if c == nil {
		c = &containerLogs{}
		cs[container] = c
	}
	if c.current != nil {
		c.current.end()
		c.previous = c.current
	}
	c.current = in
	return &instanceWriter{b: b, in: in}, &instanceWriter{b: b, in: in, stderr: true}
}

// Close ends the current instance of the container (it exited): its
// followers return after its last line, and its log is still served until
// the next Start or Remove. Unknown containers are ignored.
func (b *LogBuffer) Close(podUID types.UID, container string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.pods[podUID][container]; c != nil && c.current != nil {
		c.current.end()
	}
}

// Remove forgets every container of the pod (it is gone from the node):
// their followers return and their writers fail with ErrLogClosed.
func (b *LogBuffer) Remove(podUID types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.pods[podUID] {
		c.current.end()
	}
	delete(b.pods, podUID)
}

// Dropped returns how many bytes (lines with their newlines) the current
// instance of the container has dropped to stay within
// MaxBytesPerContainer; 0 for an unknown container.
func (b *LogBuffer) Dropped(podUID types.UID, container string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.pods[podUID][container]; c != nil && c.current != nil {
		return c.current.dropped
	}
	return 0
}

// append adds the lines of p to in. Each line gets its own copy of its
// text, so that a dropped line frees its memory.
func (b *LogBuffer) append(in *logInstance, stderr bool, p []byte) error {
	var small [4]logLine
	lines := small[:0]
	var cut int64 // bytes cut from lines too long to fit alone
	keep := max(b.max-1-logLineOverhead, 0)
	for len(p) > 0 {
		text := p
		p = nil
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			text, p = text[:i], text[i+1:]
		}
		if int64(len(text)) > keep {
			cut += int64(len(text)) - keep
			text = text[:keep]
		}
		lines = append(lines, logLine{stderr: stderr, text: bytes.Clone(text)})
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if in.ended {
		return ErrLogClosed
	}
	now := b.clock.Now()
	for i := range lines {
		lines[i].t = now
		in.add(lines[i], b.max)
	}
	in.dropped += cut
	in.notify()
	return nil
}

// add appends l and drops the oldest lines past max, keeping l.
func (in *logInstance) add(l logLine, max int64) {
	in.lines.push(l)
	in.size += l.cost()
	for in.size > max && in.lines.len() > 1 {
		old := in.lines.pop()
		in.size -= old.cost()
		in.dropped += int64(len(old.text)) + 1
		in.first++
	}
}

// end marks the instance as ended and wakes its followers. nil is ignored.
func (in *logInstance) end() {
	if in == nil || in.ended {
		return
	}
	in.ended = true
	in.notify()
}

// notify wakes the followers waiting for a change.
func (in *logInstance) notify() {
	if in.changed != nil {
		close(in.changed)
		in.changed = nil
	}
}

// instanceWriter is a writer Start returns.
type instanceWriter struct {
	b      *LogBuffer
	in     *logInstance
	stderr bool
}

func (w *instanceWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := w.b.append(w.in, w.stderr, p); err != nil {
		return 0, err
	}
	return len(p), nil
}
