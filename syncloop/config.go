package syncloop

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/prober"
)

// Upstream kubelet defaults of the loop.
const (
	// DefaultSyncPeriod is how often the loop asks which pods are due for a
	// sync (upstream's one-second syncTicker).
	DefaultSyncPeriod = time.Second
	// DefaultHousekeepingPeriod is upstream's housekeepingPeriod.
	DefaultHousekeepingPeriod = 2 * time.Second
	// DefaultHousekeepingWarning is how long housekeeping may take before
	// the loop logs that it took too long.
	DefaultHousekeepingWarning = time.Second
	// DefaultBackoffInitial is the first wait while the runtime is unhealthy.
	DefaultBackoffInitial = 100 * time.Millisecond
	// DefaultBackoffMax caps the wait while the runtime is unhealthy.
	DefaultBackoffMax = 5 * time.Second
)

// Config configures a Loop. Zero values mean upstream kubelet defaults.
// Hooks are called from the loop goroutine only, one at a time; they may
// block, which delays the loop (never a producer).
type Config struct {
	// Handler receives pod changes, syncs and housekeeping; required.
	Handler Handler

	// Sources are run by Run and merged into one update stream. Names must
	// be unique.
	Sources []Source
	// ExternalSources names further sources whose snapshots the host feeds
	// through Loop.Set. Housekeeping waits for them too.
	ExternalSources []string

	// Inbox holds the input the producers (PLEG, prober, sources) queue;
	// give one built before them (NewInbox) so they can be handed its
	// methods before the Loop exists. nil: the Loop makes its own.
	Inbox *Inbox

	// RuntimeHealth reports why the container runtime cannot sync pods, or
	// nil when it can (upstream's runtimeErrors; e.g. PLEG health). Optional:
	// nil means always healthy. It must not block.
	RuntimeHealth func() error
	// PodsToSync returns the UIDs of the pods due for a sync at the sync
	// tick: podworkers' Workers.DuePods fits as is. The loop resolves them
	// like PLEG events (PodByUID or its index) and drops UIDs it does not
	// know, as upstream's getPodsToSync does. Optional: nil means no
	// periodic syncs.
	PodsToSync func() []types.UID
	// PodByUID resolves the pod of a PLEG event or probe result. Optional:
	// by default the loop looks pods up in its own index of the non-mirror
	// pods it has dispatched and not removed, which is what upstream's pod
	// manager returns.
	PodByUID func(uid types.UID) (*v1.Pod, bool)
	// OnContainerDied is called for each ContainerDied PLEG event, after the
	// pod's sync (upstream's cleanUpContainersInPod), also for pods the
	// loop does not know and for sandboxes (the PLEG reports a stopped
	// sandbox as a died "container" of its pod). Optional.
	OnContainerDied func(ctx context.Context, podUID types.UID, containerID containerid.ID)
	// OnProbeResult is called with each readiness and startup result before
	// the pod is synced, for the host's status manager (upstream's
	// SetContainerReadiness and SetContainerStartup). Optional.
	OnProbeResult func(ctx context.Context, probe prober.ProbeType, update prober.Update)
	// OnPodObserved is called with each pod of the API server source every
	// time the source delivers it (static pods never), before the loop
	// handles it: the kubelet's hook for the pod startup SLI
	// (podstartup.Tracker.ObservedOnWatch). Optional; it must not block or
	// modify the pod.
	OnPodObserved func(pod *v1.Pod)

	// SyncPeriod is how often PodsToSync is asked; default 1s.
	SyncPeriod time.Duration
	// HousekeepingPeriod is how often HandlePodCleanups runs once all sources
	// are ready; default 2s.
	HousekeepingPeriod time.Duration
	// HousekeepingWarning is the housekeeping duration above which an error
	// is logged; default 1s.
	HousekeepingWarning time.Duration
	// BackoffInitial and BackoffMax bound the doubling wait between runtime
	// health checks while the runtime is unhealthy; defaults 100ms and 5s.
	BackoffInitial, BackoffMax time.Duration

	// Recorder receives a FailedValidation event for pods of one source with
	// duplicate names. Optional.
	Recorder record.EventRecorder
	// Clock drives every period and backoff; default the real clock.
	Clock clock.WithTicker
	// Registerer receives the loop's metrics; nil means no metrics.
	Registerer prometheus.Registerer
}

func (cfg Config) withDefaults() (Config, error) {
	if cfg.Handler == nil {
		return cfg, fmt.Errorf("%w: Handler is required", ErrInvalidConfig)
	}
	names := map[string]bool{}
	for i, s := range cfg.Sources {
		if s == nil {
			return cfg, fmt.Errorf("%w: Sources[%d] is nil", ErrInvalidConfig, i)
		}
		if err := addSourceName(names, s.Name()); err != nil {
			return cfg, err
		}
	}
	for _, n := range cfg.ExternalSources {
		if err := addSourceName(names, n); err != nil {
			return cfg, err
		}
	}
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"SyncPeriod", &cfg.SyncPeriod, DefaultSyncPeriod},
		{"HousekeepingPeriod", &cfg.HousekeepingPeriod, DefaultHousekeepingPeriod},
		{"HousekeepingWarning", &cfg.HousekeepingWarning, DefaultHousekeepingWarning},
		{"BackoffInitial", &cfg.BackoffInitial, DefaultBackoffInitial},
		{"BackoffMax", &cfg.BackoffMax, DefaultBackoffMax},
	}
	for _, d := range durations {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < 0 {
			return cfg, fmt.Errorf("%w: %s %v is negative", ErrInvalidConfig, d.name, *d.v)
		}
	}
	if cfg.BackoffMax < cfg.BackoffInitial {
		return cfg, fmt.Errorf("%w: BackoffMax %v is below BackoffInitial %v", ErrInvalidConfig, cfg.BackoffMax, cfg.BackoffInitial)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return cfg, nil
}

func addSourceName(names map[string]bool, n string) error {
	if n == "" {
		return fmt.Errorf("%w: empty source name", ErrInvalidConfig)
	}
	if names[n] {
		return fmt.Errorf("%w: duplicate source name %q", ErrInvalidConfig, n)
	}
	names[n] = true
	return nil
}
