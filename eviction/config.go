package eviction

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
)

// Upstream kubelet defaults.
const (
	// DefaultMonitoringInterval is the kubelet's housekeeping period between
	// eviction passes.
	DefaultMonitoringInterval = 10 * time.Second
	// DefaultPressureTransitionPeriod is evictionPressureTransitionPeriod:
	// how long a pressure condition stays true after its last observation.
	DefaultPressureTransitionPeriod = 5 * time.Minute
	// DefaultPodCleanupTimeout bounds the wait for an evicted pod's
	// resources to be reclaimed before the next pass.
	DefaultPodCleanupTimeout = 30 * time.Second
	// DefaultPodCleanupPollInterval is how often PodCleanedUp is asked.
	DefaultPodCleanupPollInterval = time.Second
	// HardEvictionGracePeriodSeconds is the grace period of pods evicted for
	// a hard threshold.
	HardEvictionGracePeriodSeconds int64 = 1
)

// SummaryProvider returns current node and pod statistics. Get is called
// once per pass and once more after node-level reclaim, never concurrently
// by one Manager; it should honour ctx and must not return a summary it
// will mutate later.
type SummaryProvider interface {
	Get(ctx context.Context) (*statsapi.Summary, error)
}

// SummaryProviderFunc adapts a function to SummaryProvider.
type SummaryProviderFunc func(ctx context.Context) (*statsapi.Summary, error)

// Get calls f.
func (f SummaryProviderFunc) Get(ctx context.Context) (*statsapi.Summary, error) { return f(ctx) }

// ActivePodsFunc returns the pods bound to the node that are not terminal.
// The Manager sorts the returned slice in place but never mutates the pods.
// Called once per pass from the pass's goroutine.
type ActivePodsFunc func() []*v1.Pod

// KillPodFunc stops a pod for eviction: it applies updateStatus to the pod
// status the host will report (phase Failed, reason Evicted, message and,
// for a pressure eviction, a DisruptionTarget condition), then kills the
// pod with the given grace period in seconds. It should block until the
// pod's containers are stopped or ctx is done, and return an error if the
// kill failed. It is called at most once per pass, from the pass's
// goroutine.
type KillPodFunc func(ctx context.Context, pod *v1.Pod, gracePeriodSeconds int64, updateStatus func(*v1.PodStatus)) error

// PodCleanedUpFunc reports whether all resources of an evicted pod (its
// containers, volumes, cgroups) have been reclaimed. It must not block.
type PodCleanedUpFunc func(pod *v1.Pod) bool

// ReclaimFunc frees node-level resources without touching running pods,
// for example deleting unused images or dead containers. It may block
// until done or ctx is done.
type ReclaimFunc func(ctx context.Context) error

// Config configures a Manager. Zero values mean upstream kubelet defaults.
type Config struct {
	// Thresholds to enforce, usually from ParseThresholds. nil means the
	// upstream Linux defaults (ParseThresholds(ThresholdSpec{})); a non-nil
	// empty slice disables eviction by thresholds (local storage limits
	// stay, see DisableLocalStorageLimits). containerfs thresholds are derived
	// from nodefs or imagefs ones according to the filesystem layout.
	Thresholds []Threshold
	// Summary provides node and pod statistics; required.
	Summary SummaryProvider
	// ActivePods lists the eviction candidates; required.
	ActivePods ActivePodsFunc
	// KillPod evicts one pod; required.
	KillPod KillPodFunc
	// PodCleanedUp, if set, makes Run wait (up to PodCleanupTimeout) after
	// an eviction until the pod's resources are reclaimed, then pass again
	// at once, like upstream. Without it Run waits for the next tick.
	PodCleanedUp PodCleanedUpFunc
	// DeleteUnusedContainers and DeleteUnusedImages are tried, in that
	// order, before evicting pods for disk pressure (which of them runs for
	// which signal depends on the filesystem layout, as upstream). Optional.
	DeleteUnusedContainers, DeleteUnusedImages ReclaimFunc
	// DedicatedImageFs is true when the runtime's image filesystem is not
	// the node filesystem; SplitContainerFs when container writable layers
	// are on the node filesystem while images have their own.
	DedicatedImageFs, SplitContainerFs bool
	// DisableLocalStorageLimits turns off the eviction of pods over their
	// local storage limits (emptyDir sizeLimit, pod and container
	// ephemeral-storage limits), as the kubelet's
	// localStorageCapacityIsolation: false. By default such a pod is
	// evicted at once, whatever the thresholds.
	DisableLocalStorageLimits bool
	// PressureTransitionPeriod keeps a pressure condition true this long
	// after it was last observed; default 5m.
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds caps the pod's terminationGracePeriodSeconds
	// for soft evictions; default 0, as upstream (which makes soft
	// evictions immediate unless raised). Must not be negative.
	MaxPodGracePeriodSeconds int64
	// MonitoringInterval is the period of Run's passes; default 10s.
	MonitoringInterval time.Duration
	// PodCleanupTimeout and PodCleanupPollInterval bound the wait for
	// PodCleanedUp; defaults 30s and 1s.
	PodCleanupTimeout, PodCleanupPollInterval time.Duration
	// Notifiers run for the lifetime of Run and trigger an immediate pass
	// when pressure may have changed (see NewPSINotifier). Optional.
	Notifiers []Notifier
	// Recorder, if set, receives upstream's events: EvictionThresholdMet on
	// NodeRef and Evicted on the pod.
	Recorder record.EventRecorder
	// NodeRef is the object EvictionThresholdMet events are recorded on.
	NodeRef *v1.ObjectReference
	// Clock drives every period and timestamp; default the real clock.
	Clock clock.WithTicker
	// Registerer receives kubelet_evictions and
	// kubelet_eviction_stats_age_seconds; nil means no metrics.
	Registerer prometheus.Registerer
}

func (cfg Config) withDefaults() (Config, error) {
	switch {
	case cfg.Summary == nil:
		return cfg, fmt.Errorf("%w: Summary is required", ErrInvalidConfig)
	case cfg.ActivePods == nil:
		return cfg, fmt.Errorf("%w: ActivePods is required", ErrInvalidConfig)
	case cfg.KillPod == nil:
		return cfg, fmt.Errorf("%w: KillPod is required", ErrInvalidConfig)
	case cfg.SplitContainerFs && !cfg.DedicatedImageFs:
		return cfg, fmt.Errorf("%w: SplitContainerFs requires DedicatedImageFs", ErrInvalidConfig)
	case cfg.MaxPodGracePeriodSeconds < 0:
		return cfg, fmt.Errorf("%w: MaxPodGracePeriodSeconds %d is negative", ErrInvalidConfig, cfg.MaxPodGracePeriodSeconds)
	}
	if cfg.Thresholds == nil {
		ts, err := ParseThresholds(ThresholdSpec{})
		if err != nil {
			return cfg, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		cfg.Thresholds = ts
	}
	if err := validateThresholds(cfg.Thresholds); err != nil {
		return cfg, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	cfg.Thresholds = deriveContainerFsThresholds(cfg.Thresholds, cfg.DedicatedImageFs, cfg.SplitContainerFs)
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"PressureTransitionPeriod", &cfg.PressureTransitionPeriod, DefaultPressureTransitionPeriod},
		{"MonitoringInterval", &cfg.MonitoringInterval, DefaultMonitoringInterval},
		{"PodCleanupTimeout", &cfg.PodCleanupTimeout, DefaultPodCleanupTimeout},
		{"PodCleanupPollInterval", &cfg.PodCleanupPollInterval, DefaultPodCleanupPollInterval},
	}
	for _, d := range durations {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < 0 {
			return cfg, fmt.Errorf("%w: %s %v is negative", ErrInvalidConfig, d.name, *d.v)
		}
	}
	for i, n := range cfg.Notifiers {
		if n == nil {
			return cfg, fmt.Errorf("%w: Notifiers[%d] is nil", ErrInvalidConfig, i)
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return cfg, nil
}
