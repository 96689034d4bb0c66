package podsyncer

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The kubelet's termination message limits: 4 KiB read from the file,
// and with FallbackToLogsOnError the last 80 lines or 2 KiB of the log;
// 12 KiB for the whole pod, shared equally by its containers.
const (
	maxTerminationMessage     = 4 << 10
	maxPodTerminationMessages = 12 << 10
	maxTerminationLogMessage  = 2 << 10
	maxTerminationLogLines    = 80
)

// terminationMessageMount creates the host file a container writes its
// termination message to (<pod dir>/containers/<name>/<random>, world
// writable so any user can write it) and returns its mount; nil when the
// container has no terminationMessagePath.
func (s *Syncer) terminationMessageMount(pod *v1.Pod, c *v1.Container) (*runtimeapi.Mount, error) {
	if c.TerminationMessagePath == "" {
		return nil, nil
	}
	dir := filepath.Join(s.volumes.PodDir(pod.UID), "containers", c.Name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, hex.EncodeToString(id[:]))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		return nil, fmt.Errorf("termination message file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o666); err != nil { // past the umask
		return nil, err
	}
	return &runtimeapi.Mount{ContainerPath: c.TerminationMessagePath, HostPath: path}, nil
}

// terminationMessage is an exited container's message: the runtime's if
// it has one, else what the container wrote to its termination message
// file, else (FallbackToLogsOnError, failed) the tail of its log.
func terminationMessage(c *v1.Container, st *runtimeapi.ContainerStatus) string {
	if st.Message != "" || c == nil {
		return st.Message
	}
	if c.TerminationMessagePath != "" {
		for _, m := range st.Mounts {
			if m.ContainerPath == c.TerminationMessagePath {
				if msg := readHead(m.HostPath, maxTerminationMessage); msg != "" {
					return msg
				}
			}
		}
	}
	if c.TerminationMessagePolicy == v1.TerminationMessageFallbackToLogsOnError && st.ExitCode != 0 && st.LogPath != "" {
		return logTail(st.LogPath, maxTerminationLogLines, maxTerminationLogMessage)
	}
	return ""
}

func readHead(path string, limit int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	b, _ := io.ReadAll(io.LimitReader(f, limit))
	return string(b)
}

// logTail returns the content of the last lines of a CRI-format log
// ("<time> <stream> <P|F> <text>"), at most maxBytes from its end.
func logTail(path string, lines, maxBytes int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	const window = 64 << 10 // enough for 80 lines of any sane log
	var from int64
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		from = fi.Size() - window
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return ""
	}
	raw, _ := io.ReadAll(f)
	if from > 0 {
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			raw = raw[i+1:] // the first line is partial
		}
	}
	var out strings.Builder
	var texts []string
	for _, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		parts := strings.SplitN(line, " ", 4)
		if len(parts) < 4 {
			continue
		}
		out.WriteString(parts[3])
		if parts[2] != "P" { // a full line ends here
			out.WriteString("\n")
			texts = append(texts, out.String())
			out.Reset()
		}
	}
	if out.Len() > 0 {
		texts = append(texts, out.String())
	}
	if len(texts) > lines {
		texts = texts[len(texts)-lines:]
	}
	msg := strings.Join(texts, "")
	if len(msg) > maxBytes {
		msg = msg[len(msg)-maxBytes:]
	}
	return msg
}
