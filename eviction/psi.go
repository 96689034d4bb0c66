package eviction

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// PSI notifier defaults.
const (
	// DefaultPSIPath is the system-wide memory pressure file.
	DefaultPSIPath = "/proc/pressure/memory"
	// DefaultPSIStall is the stall time within a window that fires the
	// trigger.
	DefaultPSIStall = 100 * time.Millisecond
	// DefaultPSIWindow is the PSI trigger window (the kernel accepts 500ms
	// to 10s).
	DefaultPSIWindow = time.Second
	// DefaultFallbackInterval is the polling period used where PSI
	// triggers are not available.
	DefaultFallbackInterval = time.Second
)

// PSIConfig configures a PSI notifier. Zero values mean the defaults above.
type PSIConfig struct {
	// Path is a PSI file accepting triggers: /proc/pressure/memory (the
	// default) or a cgroup v2 memory.pressure file such as the pods
	// cgroup's.
	Path string
	// Full selects "full" stalls (all tasks stalled) instead of "some".
	Full bool
	// Stall and Window: the trigger fires when tasks stalled on memory for
	// Stall within any Window; defaults 100ms and 1s.
	Stall, Window time.Duration
	// FallbackInterval is the polling period used when PSI triggers cannot
	// be armed (no PSI, not Linux, no permission); default 1s. Negative
	// disables the fallback: the notifier then just waits for cancellation.
	FallbackInterval time.Duration
	// Clock drives the fallback polling; default the real clock.
	Clock clock.WithTicker
}

// PSINotifier is a Notifier that wakes the Manager when the kernel reports
// memory stalls through a PSI trigger, without any periodic polling. Where
// triggers are unavailable it logs why and degrades to calling notify every
// FallbackInterval.
type PSINotifier struct {
	cfg PSIConfig
	// armed, if set, is called once the PSI trigger is armed (tests).
	armed func()
}

// NewPSINotifier validates cfg and returns a PSINotifier.
func NewPSINotifier(cfg PSIConfig) (*PSINotifier, error) {
	if cfg.Path == "" {
		cfg.Path = DefaultPSIPath
	}
	if cfg.Stall == 0 {
		cfg.Stall = DefaultPSIStall
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultPSIWindow
	}
	if cfg.Window < 500*time.Millisecond || cfg.Window > 10*time.Second {
		return nil, fmt.Errorf("%w: PSI Window %v must be within [500ms, 10s]", ErrInvalidConfig, cfg.Window)
	}
	if cfg.Stall <= 0 || cfg.Stall > cfg.Window {
		return nil, fmt.Errorf("%w: PSI Stall %v must be positive and at most Window %v", ErrInvalidConfig, cfg.Stall, cfg.Window)
	}
	if cfg.FallbackInterval == 0 {
		cfg.FallbackInterval = DefaultFallbackInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &PSINotifier{cfg: cfg}, nil
}

// trigger is the line written to the PSI file.
func (n *PSINotifier) trigger() string {
	kind := "some"
	if n.cfg.Full {
		kind = "full"
	}
	return fmt.Sprintf("%s %d %d", kind, n.cfg.Stall.Microseconds(), n.cfg.Window.Microseconds())
}

// Run arms the trigger and calls notify on every event until ctx is done.
func (n *PSINotifier) Run(ctx context.Context, notify func()) error {
	logger := klog.FromContext(ctx).WithValues("path", n.cfg.Path)
	err := n.watch(ctx, notify)
	if err == nil || ctx.Err() != nil {
		return nil
	}
	if n.cfg.FallbackInterval < 0 {
		logger.Info("PSI memory notifier unavailable; relying on periodic passes", "err", err)
		<-ctx.Done()
		return nil
	}
	logger.Info("PSI memory notifier unavailable; degrading to polling", "err", err, "interval", n.cfg.FallbackInterval)
	t := n.cfg.Clock.NewTicker(n.cfg.FallbackInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			notify()
		}
	}
}
