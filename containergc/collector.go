package containergc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/internal/parking"
)

// ErrInvalidConfig wraps every error NewCollector returns for a bad Config.
var ErrInvalidConfig = errors.New("containergc: invalid config")

// DefaultPeriod is the kubelet's ContainerGCPeriod.
const DefaultPeriod = time.Minute

// CollectorConfig configures a Collector; Runtime and PodExists are
// required.
type CollectorConfig struct {
	// Runtime is the CRI runtime to collect.
	Runtime Runtime
	// Policy is the retention policy; zero is the kubelet's default.
	Policy Policy
	// PodExists reports whether the agent still knows a pod.
	PodExists func(types.UID) bool
	// SourcesReady reports whether every pod source has been read once;
	// until then every pod counts as existing, so nothing of a pod is
	// removed because its config has not arrived yet (the kubelet's
	// allSourcesReady). Nil: always ready.
	SourcesReady func() bool
	// PodLogsDir, if set, is the pod log root ("/var/log/pods"): after
	// each pass (once SourcesReady) the log directory of every pod the
	// agent no longer knows, and of which the runtime has no sandbox or
	// container left, is removed, rotated logs and all (the kubelet's
	// evictPodLogsDirectories). Empty: pod log directories are the
	// host's.
	PodLogsDir string
	// RemoveContainerLogs, if set, removes a container's log files (the
	// live and the rotated ones: logrotate.Manager.Clean) before the
	// container is removed; when it fails the container stays, as the
	// kubelet's removeContainer. Nil: the files stay until their pod's log
	// directory goes (PodLogsDir).
	RemoveContainerLogs func(ctx context.Context, containerID string) error
	// Period is the time between passes of Run; zero means DefaultPeriod.
	Period time.Duration
	// Clock drives Run; nil means the real clock.
	Clock clock.WithTicker
}

// Collector runs Collect periodically and on demand (eviction's reclaim
// of disk), one pass at a time.
type Collector struct {
	cfg    CollectorConfig
	mu     sync.Mutex // one pass at a time
	parked parking.State
}

// NewCollector validates cfg and returns a Collector; no I/O.
func NewCollector(cfg CollectorConfig) (*Collector, error) {
	if cfg.Runtime == nil || cfg.PodExists == nil {
		return nil, fmt.Errorf("%w: Runtime and PodExists are required", ErrInvalidConfig)
	}
	if cfg.Period < 0 {
		return nil, fmt.Errorf("%w: Period %v is negative", ErrInvalidConfig, cfg.Period)
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Collector{cfg: cfg}, nil
}

// Collect is one pass: Collect with the collector's policy. It fits
// eviction.Config.DeleteUnusedContainers.
func (c *Collector) Collect(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	exists := c.cfg.PodExists
	if c.cfg.SourcesReady != nil && !c.cfg.SourcesReady() {
		exists = func(types.UID) bool { return true }
	}
	rt := c.cfg.Runtime
	if c.cfg.RemoveContainerLogs != nil {
		rt = logCleaning{rt, c.cfg.RemoveContainerLogs}
	}
	_, err := Collect(ctx, rt, c.cfg.Policy, exists)
	if c.cfg.PodLogsDir != "" && (c.cfg.SourcesReady == nil || c.cfg.SourcesReady()) {
		err = errors.Join(err, c.evictPodLogs(ctx))
	}
	return err
}

// logCleaning removes a container's logs before the container.
type logCleaning struct {
	Runtime
	removeLogs func(ctx context.Context, containerID string) error
}

func (r logCleaning) RemoveContainer(ctx context.Context, id string) error {
	if err := r.removeLogs(ctx, id); err != nil {
		return fmt.Errorf("remove the logs of container %s: %w", id, err)
	}
	return r.Runtime.RemoveContainer(ctx, id)
}

// evictPodLogs removes the log directories ("<namespace>_<name>_<uid>")
// of pods that are gone from the agent and from the runtime.
func (c *Collector) evictPodLogs(ctx context.Context) error {
	entries, err := os.ReadDir(c.cfg.PodLogsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read pod logs directory: %w", err)
	}
	running := map[types.UID]bool{}
	sandboxes, err := c.cfg.Runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", err)
	}
	for _, sb := range sandboxes {
		running[types.UID(sb.GetMetadata().GetUid())] = true
	}
	containers, err := c.cfg.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	for _, ctr := range containers {
		running[types.UID(ctr.GetLabels()[labelPodUID])] = true
	}
	logger := klog.FromContext(ctx)
	for _, e := range entries {
		name := e.Name()
		uid := types.UID(name[strings.LastIndex(name, "_")+1:])
		if !e.IsDir() || uid == "" || c.cfg.PodExists(uid) || running[uid] {
			continue
		}
		logger.V(4).Info("Removing pod logs", "podUID", uid)
		if err := os.RemoveAll(filepath.Join(c.cfg.PodLogsDir, name)); err != nil {
			logger.Error(err, "Failed to remove pod logs directory", "path", name)
		}
	}
	return nil
}

// Run collects at once and then every Period until ctx is done; a failed
// pass is logged and the next one runs on time. It returns nil.
func (c *Collector) Run(ctx context.Context) error {
	c.parked.Every(ctx, c.cfg.Clock, c.cfg.Period, func() {
		if err := c.Collect(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Container garbage collection failed")
		}
	})
	return nil
}

// NextWake tells when Run's next pass is due, on the injected clock, while
// Run waits for it; ok is false during a pass and when Run is not running
// (clockdrive.Waker). A next not after the clock's now means the tick has
// fired and Run is about to wake.
func (c *Collector) NextWake() (next time.Time, ok bool) { return c.parked.Next() }
