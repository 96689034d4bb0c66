package logrotate

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/internal/parking"
)

// The kubelet's defaults (KubeletConfiguration v1beta1).
const (
	// DefaultMaxSize is containerLogMaxSize, 10Mi.
	DefaultMaxSize = 10 << 20
	// DefaultMaxFiles is containerLogMaxFiles.
	DefaultMaxFiles = 5
	// DefaultMaxWorkers is containerLogMaxWorkers.
	DefaultMaxWorkers = 1
	// DefaultMonitorInterval is containerLogMonitorInterval.
	DefaultMonitorInterval = 10 * time.Second
)

const (
	timestampFormat = "20060102-150405"
	compressSuffix  = ".gz"
	tmpSuffix       = ".tmp"
)

// ErrInvalidConfig wraps every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("logrotate: invalid config")

// Runtime is the part of the CRI runtime service the manager uses; a
// criapi.RuntimeService implements it.
type Runtime interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	ReopenContainerLog(ctx context.Context, containerID string) error
}

// Config configures a Manager. Runtime is required; zero values of the
// rest are the kubelet's defaults.
type Config struct {
	Runtime Runtime
	// MaxSize is the size in bytes at which a log is rotated
	// (0: DefaultMaxSize; negative: never rotate).
	MaxSize int64
	// MaxFiles is the most files a container's log may take, the live
	// one included (0: DefaultMaxFiles; otherwise at least 2).
	MaxFiles int
	// MaxWorkers is how many containers a pass looks at concurrently
	// (0: DefaultMaxWorkers).
	MaxWorkers int
	// MonitorInterval is the period of Run's passes (0:
	// DefaultMonitorInterval).
	MonitorInterval time.Duration
	// Clock times Run and names rotated files; nil is the real clock.
	Clock clock.WithTicker
}

// Manager rotates container logs. Build it with New.
type Manager struct {
	cfg    Config
	mu     sync.Mutex // one pass, or one Clean, at a time
	parked parking.State
}

// New validates cfg and returns a Manager; no I/O.
func New(cfg Config) (*Manager, error) {
	if cfg.Runtime == nil {
		return nil, fmt.Errorf("%w: Runtime is required", ErrInvalidConfig)
	}
	switch {
	case cfg.MaxFiles == 0:
		cfg.MaxFiles = DefaultMaxFiles
	case cfg.MaxFiles < 2:
		return nil, fmt.Errorf("%w: MaxFiles %d, must be > 1", ErrInvalidConfig, cfg.MaxFiles)
	}
	switch {
	case cfg.MaxWorkers == 0:
		cfg.MaxWorkers = DefaultMaxWorkers
	case cfg.MaxWorkers < 0:
		return nil, fmt.Errorf("%w: MaxWorkers %d is negative", ErrInvalidConfig, cfg.MaxWorkers)
	}
	switch {
	case cfg.MonitorInterval == 0:
		cfg.MonitorInterval = DefaultMonitorInterval
	case cfg.MonitorInterval < 0:
		return nil, fmt.Errorf("%w: MonitorInterval %v is negative", ErrInvalidConfig, cfg.MonitorInterval)
	}
	if cfg.MaxSize == 0 {
		cfg.MaxSize = DefaultMaxSize
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Manager{cfg: cfg}, nil
}

// Run makes a pass at once and then every MonitorInterval until ctx is done, then returns
// nil; with a negative MaxSize it only waits for ctx. Errors of a pass are
// logged.
func (m *Manager) Run(ctx context.Context) error {
	if m.cfg.MaxSize < 0 {
		<-ctx.Done()
		return nil
	}
	m.parked.Every(ctx, m.cfg.Clock, m.cfg.MonitorInterval, func() {
		if err := m.RotateLogs(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Failed to rotate container logs")
		}
	})
	return nil
}

// NextWake tells when Run's next pass is due while Run waits for it
// (clockdrive.Waker); ok is false during a pass and when Run is not
// running.
func (m *Manager) NextWake() (next time.Time, ok bool) { return m.parked.Next() }

// RotateLogs is one pass over the running containers. It fails only when
// the containers cannot be listed; a container whose log cannot be
// rotated is logged and left for the next pass.
func (m *Manager) RotateLogs(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	containers, err := m.cfg.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	ids := make(chan string)
	var wg sync.WaitGroup
	for range min(m.cfg.MaxWorkers, len(containers)) {
		wg.Go(func() {
			for id := range ids {
				m.process(ctx, id)
			}
		})
	}
	for _, c := range containers {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			ids <- c.GetId()
		}
	}
	close(ids)
	wg.Wait()
	return nil
}

// process rotates one container's log if it is at MaxSize.
func (m *Manager) process(ctx context.Context, id string) {
	logger := klog.FromContext(ctx).WithValues("containerID", id)
	resp, err := m.cfg.Runtime.ContainerStatus(ctx, id, false)
	if err != nil || resp.GetStatus() == nil {
		logger.V(2).Info("No status for a container's log rotation", "err", err)
		return
	}
	path := resp.GetStatus().GetLogPath()
	if path == "" {
		return
	}
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err = m.cfg.Runtime.ReopenContainerLog(ctx, id); err != nil {
			logger.Error(err, "Container log doesn't exist, reopen container log failed", "path", path)
			return
		}
		info, err = os.Stat(path)
	}
	if err != nil {
		logger.Error(err, "Failed to stat container log", "path", path)
		return
	}
	if info.Size() < m.cfg.MaxSize {
		return
	}
	if err := m.rotate(ctx, id, path); err != nil {
		logger.Error(err, "Failed to rotate log for container", "path", path, "currentSize", info.Size(), "maxSize", m.cfg.MaxSize)
	}
}

// rotate rotates the live log of container id at path.
func (m *Manager) rotate(ctx context.Context, id, path string) error {
	logs, err := filepath.Glob(path + ".*")
	if err != nil {
		return fmt.Errorf("list rotated logs of %s: %w", path, err)
	}
	inUse, unused := splitUnused(logs)
	for _, l := range unused {
		if err := os.Remove(l); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove unused log %s: %w", l, err)
		}
	}
	// The live file and the one rotated now take two of MaxFiles.
	sort.Strings(inUse)
	keep := max(m.cfg.MaxFiles-2, 0)
	for len(inUse) > keep {
		if err := os.Remove(inUse[0]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove old log %s: %w", inUse[0], err)
		}
		inUse = inUse[1:]
	}
	for _, l := range inUse {
		if !strings.HasSuffix(l, compressSuffix) {
			if err := compress(l); err != nil {
				return err
			}
		}
	}
	rotated := path + "." + m.cfg.Clock.Now().Format(timestampFormat)
	if err := os.Rename(path, rotated); err != nil {
		return fmt.Errorf("rotate %s: %w", path, err)
	}
	if err := m.cfg.Runtime.ReopenContainerLog(ctx, id); err != nil {
		// Put it back so that the next pass tries again and nothing is lost.
		if rerr := os.Rename(rotated, path); rerr != nil {
			klog.FromContext(ctx).Error(rerr, "Failed to rename rotated log back", "rotatedLog", rotated, "log", path, "containerID", id)
		}
		return fmt.Errorf("reopen container log %s: %w", id, err)
	}
	return nil
}

// splitUnused tells the rotated files in use from the leftovers of an
// interrupted rotation: temporary files, and plain files whose compressed
// copy exists.
func splitUnused(logs []string) (inUse, unused []string) {
	have := make(map[string]bool, len(logs))
	for _, l := range logs {
		have[l] = true
	}
	for _, l := range logs {
		switch {
		case strings.HasSuffix(l, tmpSuffix):
			unused = append(unused, l)
		case strings.HasSuffix(l, compressSuffix):
			inUse = append(inUse, l)
		case have[l+compressSuffix]:
			unused = append(unused, l)
		default:
			inUse = append(inUse, l)
		}
	}
	return inUse, unused
}

// compress gzips log into log.gz (written as log.tmp first, as the
// kubelet does) and removes log.
func compress(log string) (err error) {
	in, err := os.Open(log)
	if err != nil {
		return fmt.Errorf("open log %s: %w", log, err)
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return fmt.Errorf("stat log %s: %w", log, err)
	}
	tmp := log + tmpSuffix
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, st.Mode().Perm())
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	defer func() {
		_ = out.Close()
		_ = os.Remove(tmp) // gone after the rename; a failure's leftover otherwise
	}()
	w := gzip.NewWriter(out)
	if _, err := io.Copy(w, in); err != nil {
		return fmt.Errorf("compress %s: %w", log, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("compress %s: %w", log, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("compress %s: %w", log, err)
	}
	if err := os.Rename(tmp, log+compressSuffix); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	if err := os.Remove(log); err != nil {
		return fmt.Errorf("remove %s after compressing it: %w", log, err)
	}
	return nil
}

// Clean removes every log file of the container (its log path and the
// files rotated from it).
func (m *Manager) Clean(ctx context.Context, containerID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	resp, err := m.cfg.Runtime.ContainerStatus(ctx, containerID, false)
	if err != nil {
		return fmt.Errorf("container status %s: %w", containerID, err)
	}
	path := resp.GetStatus().GetLogPath()
	if path == "" {
		return nil
	}
	logs, err := filepath.Glob(path + "*")
	if err != nil {
		return fmt.Errorf("list logs of %s: %w", containerID, err)
	}
	for _, l := range logs {
		if err := os.Remove(l); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove container %s log %s: %w", containerID, l, err)
		}
	}
	return nil
}
