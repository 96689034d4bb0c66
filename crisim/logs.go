package crisim

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// criLogTimeFormat is the timestamp layout of the CRI log format, the one
// the kubelet and containerd write (RFC 3339 with nanoseconds).
const criLogTimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// LogLine is one line of a simulated container's output.
type LogLine struct {
	// Text is the line without its trailing newline. A Text with inner
	// newlines makes one log entry per line.
	Text string
	// Stderr sends the line to stderr instead of stdout.
	Stderr bool
}

func (l LogLine) stream() string {
	if l.Stderr {
		return "stderr"
	}
	return "stdout"
}

// logEntry is a line of output with the instant it was written.
type logEntry struct {
	at   time.Time
	line LogLine
}

type logRule struct {
	match Match
	lines []LogLine
}

// ScriptLogs makes the containers selected by m print lines on stdout when
// they start (from their next StartContainer on). When several rules
// match, the last one registered wins; without any, a container prints
// nothing. See ScriptLogLines for stderr.
func (s *Sim) ScriptLogs(m Match, lines ...string) {
	ll := make([]LogLine, 0, len(lines))
	for _, l := range lines {
		ll = append(ll, LogLine{Text: l})
	}
	s.ScriptLogLines(m, ll...)
}

// ScriptLogLines is ScriptLogs with a stream per line.
func (s *Sim) ScriptLogLines(m Match, lines ...LogLine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs = append(s.logs, logRule{match: m, lines: splitLines(lines)})
}

func (s *Sim) logLinesLocked(target Match) []LogLine {
	for i := len(s.logs) - 1; i >= 0; i-- {
		if s.logs[i].match.matches(target) {
			return s.logs[i].lines
		}
	}
	return nil
}

// AppendLog makes a running container print lines now: they are written
// to its log file, stamped with the current time of the injected clock,
// and sent to the sessions attached to it.
func (s *Sim) AppendLog(id string, lines ...LogLine) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[id]
	if !ok {
		return notFound("container", id)
	}
	if !c.running() {
		return precondition("container %q is not running", id)
	}
	s.printLocked(c, s.clock.Now(), splitLines(lines))
	return nil
}

// printLocked records lines as printed by c at the given instant, appends
// them to its log file and wakes its attached sessions.
func (s *Sim) printLocked(c *container, at time.Time, lines []LogLine) {
	entries := make([]logEntry, 0, len(lines))
	for _, l := range lines {
		entries = append(entries, logEntry{at: at, line: l})
	}
	c.output = append(c.output, entries...)
	writeLogFile(c.logPath, entries)
	if len(entries) > 0 && c.outputChanged != nil {
		close(c.outputChanged)
		c.outputChanged = nil
	}
}

// outputLocked returns the lines c printed from index from on and a
// channel closed when it prints more.
func (c *container) outputLocked(from int) ([]logEntry, <-chan struct{}) {
	if c.outputChanged == nil {
		c.outputChanged = make(chan struct{})
	}
	return c.output[from:len(c.output):len(c.output)], c.outputChanged
}

// writeLogFile appends entries to the log file at path in the CRI log
// format ("<RFC 3339 nano time> <stream> F <text>"), creating the file and
// its directory if needed, even when there is nothing to write: a real
// runtime creates the log when the container starts. Relative paths (a
// LogPath without a sandbox LogDirectory) are not written. Errors are
// ignored: like a container whose runtime cannot log, the container keeps
// running.
func writeLogFile(path string, entries []logEntry) {
	if path == "" || !filepath.IsAbs(path) {
		return
	}
	var buf bytes.Buffer
	for _, e := range entries {
		buf.WriteString(e.at.UTC().Format(criLogTimeFormat))
		buf.WriteByte(' ')
		buf.WriteString(e.line.stream())
		buf.WriteString(" F ")
		buf.WriteString(e.line.Text)
		buf.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return
	}
	_, _ = f.Write(buf.Bytes())
	_ = f.Close()
}

// splitLines returns lines with one entry per line of text, dropping one
// trailing newline.
func splitLines(lines []LogLine) []LogLine {
	out := make([]LogLine, 0, len(lines))
	for _, l := range lines {
		for _, text := range strings.Split(strings.TrimSuffix(l.Text, "\n"), "\n") {
			out = append(out, LogLine{Text: text, Stderr: l.Stderr})
		}
	}
	return out
}
