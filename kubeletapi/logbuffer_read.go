package kubeletapi

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	v1 "k8s.io/api/core/v1"
)

// logTimestampFormat is the kubelet's timestamp prefix (RFC 3339 with
// nanoseconds, zero-padded to a fixed width), as its CRI log reader writes.
const logTimestampFormat = "2006-01-02T15:04:05.000000000Z07:00"

const (
	// logReadBatch bounds the lines a reader copies under the lock at once.
	logReadBatch = 512
	// logWriteChunk is the size past which a reader writes what it has
	// gathered, so that a large log is not one Write.
	logWriteChunk = 32 << 10
)

// ContainerLogs implements LogSource for the instances that Start began,
// with the kubelet's semantics: tailLines counts the last lines of both
// streams, then sinceSeconds (back from the buffer's clock) or sinceTime
// skips older lines, then lines of a stream whose writer is nil are
// skipped; timestamps prefixes each line with its time in UTC; limitBytes
// stops after that many bytes written, possibly within a line.
//
// Previous serves the instance before the current one, or fails with the
// kubelet's "previous terminated container … not found". A container
// never started (or removed) fails with the kubelet's "is waiting to
// start" error, with the waiting reason of the pod's status if it has
// one; a started one without lines writes nothing and returns nil.
//
// Once the log is found, an empty Write to the first non-nil writer lets
// the server send its headers. With Follow, the lines written after the
// call are streamed as they arrive until the instance ends (nil, after
// its last line), limitBytes is reached (nil) or ctx is done (ctx.Err()).
// An error of a writer is returned as is.
func (b *LogBuffer) ContainerLogs(ctx context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions, stdout, stderr io.Writer) error {
	in, err := b.instance(pod, container, opts.Previous)
	if err != nil {
		return err
	}
	out := &logOutput{stdout: stdout, stderr: stderr, timestamps: opts.Timestamps, remain: -1}
	if opts.LimitBytes != nil {
		out.remain = *opts.LimitBytes
	}
	switch {
	case opts.SinceSeconds != nil:
		out.since = b.clock.Now().Add(-time.Duration(*opts.SinceSeconds) * time.Second)
	case opts.SinceTime != nil:
		out.since = opts.SinceTime.Time
	}

	b.mu.Lock()
	next, stop := in.first, in.first+int64(in.lines.len())
	if t := opts.TailLines; t != nil && *t >= 0 && *t < stop-next { // negative: all, as the CRI reader
		next = stop - *t
	}
	b.mu.Unlock()
	if opts.Follow {
		stop = math.MaxInt64
	}
	for _, w := range []io.Writer{stdout, stderr} {
		if w != nil {
			if _, err := w.Write(nil); err != nil {
				return err
			}
			break
		}
	}

	batch := make([]logLine, 0, logReadBatch)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var wait chan struct{}
		b.mu.Lock()
		batch = in.read(&next, stop, batch[:0])
		if len(batch) == 0 && opts.Follow && !in.ended {
			if in.changed == nil {
				in.changed = make(chan struct{})
			}
			wait = in.changed
		}
		b.mu.Unlock()

		if len(batch) == 0 {
			if wait == nil {
				return nil
			}
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if done, err := out.write(batch); done || err != nil {
			return err
		}
	}
}

// instance finds the instance a request asks for, or the kubelet's error
// for its absence.
func (b *LogBuffer) instance(pod *v1.Pod, container string, previous bool) (*logInstance, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.pods[pod.UID][container]
	switch {
	case previous && (c == nil || c.previous == nil):
		return nil, fmt.Errorf("previous terminated container %q in pod %q not found", container, pod.Name)
	case previous:
		return c.previous, nil
	case c == nil || c.current == nil:
		if reason := waitingReason(pod, container); reason != "" {
			return nil, fmt.Errorf("container %q in pod %q is waiting to start: %s", container, pod.Name, reason)
		}
		return nil, fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", container, pod.Name)
	}
	return c.current, nil
}

// waitingReason is the reason of the container's waiting state in the
// pod's status, or "".
func waitingReason(pod *v1.Pod, container string) string {
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == container && list[i].State.Waiting != nil {
				return list[i].State.Waiting.Reason
			}
		}
	}
	return ""
}

// read appends to buf up to logReadBatch lines from sequence number *next
// (or the oldest kept one, if those were dropped) and before stop, and
// moves *next past them. LogBuffer.mu must be held.
func (in *logInstance) read(next *int64, stop int64, buf []logLine) []logLine {
	*next = max(*next, in.first)
	from := *next - in.first
	to := min(int64(in.lines.len()), stop-in.first, from+logReadBatch)
	if from >= to {
		return buf
	}
	*next += to - from
	return in.lines.appendRange(buf, int(from), int(to))
}

// logOutput writes lines to a request's writers with its options.
type logOutput struct {
	stdout, stderr io.Writer // nil: not requested
	timestamps     bool
	since          time.Time // lines before it are skipped
	remain         int64     // bytes left under limitBytes; negative: no limit

	buf []byte    // gathered, not yet written
	to  io.Writer // the writer of buf
}

// write writes lines, gathering consecutive lines for one writer into one
// Write, and reports whether limitBytes was reached.
func (o *logOutput) write(lines []logLine) (bool, error) {
	for _, l := range lines {
		if l.t.Before(o.since) {
			continue
		}
		w := o.stdout
		if l.stderr {
			w = o.stderr
		}
		if w == nil {
			continue
		}
		if w != o.to || len(o.buf) >= logWriteChunk {
			if err := o.flush(); err != nil {
				return false, err
			}
			o.to = w
		}
		if o.timestamps {
			o.buf = l.t.UTC().AppendFormat(o.buf, logTimestampFormat)
			o.buf = append(o.buf, ' ')
		}
		o.buf = append(o.buf, l.text...)
		o.buf = append(o.buf, '\n')
		if o.remain >= 0 && int64(len(o.buf)) >= o.remain {
			o.buf = o.buf[:o.remain]
			return true, o.flush()
		}
	}
	return false, o.flush()
}

// flush writes what was gathered.
func (o *logOutput) flush() error {
	if len(o.buf) == 0 {
		return nil
	}
	n, err := o.to.Write(o.buf)
	if o.remain >= 0 {
		o.remain -= int64(n)
	}
	if err == nil && n < len(o.buf) {
		err = io.ErrShortWrite
	}
	o.buf = o.buf[:0]
	return err
}
