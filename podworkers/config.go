package podworkers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/kubetypes"
)

// Upstream kubelet defaults.
const (
	// DefaultResyncInterval is the kubelet's syncFrequency: a pod synced
	// without error is due again after this long.
	DefaultResyncInterval = time.Minute
	// DefaultResyncJitter stretches each resync by up to this fraction.
	DefaultResyncJitter = 0.5
	// DefaultBackOffPeriod is the kubelet's backOffPeriod: a pod whose sync
	// failed is due again after this long.
	DefaultBackOffPeriod = 10 * time.Second
	// DefaultBackOffJitter stretches each backoff by up to this fraction.
	DefaultBackOffJitter = 0.5
)

// StatusBarrier blocks until the host's runtime status for uid is newer than
// after (the end of the pod's previous sync; zero before the first), or ctx
// is done. Pass the PLEG cache's WaitNewerThan (GetNewerThan without the
// status, which has this shape): the Syncer reads the status from the same
// cache afterwards. It is called from
// worker goroutines, concurrently for different pods, and must honour ctx.
// An error fails the sync and is retried after the backoff.
type StatusBarrier func(ctx context.Context, uid types.UID, after time.Time) error

// Config configures Workers. Zero values mean upstream kubelet defaults.
type Config struct {
	// Syncer does the runtime work; required.
	Syncer Syncer
	// StatusBarrier waits for fresh runtime status before each sync of a pod
	// with config; nil means no wait.
	StatusBarrier StatusBarrier
	// IsStatic reports whether a pod is static (runs one at a time per full
	// name). Default: the kubernetes.io/config.source annotation is present
	// and not "api", like the kubelet. Must be safe for concurrent use.
	IsStatic func(pod *v1.Pod) bool

	// ResyncInterval is the delay before a successfully synced pod is due
	// again; default 1m.
	ResyncInterval time.Duration
	// ResyncJitter stretches each resync delay by up to this fraction;
	// default 0.5. Negative disables jitter.
	ResyncJitter float64
	// BackOffPeriod is the delay before a pod whose sync failed is due
	// again, unless the error implements RetryAfter; default 10s. It must
	// not exceed ResyncInterval.
	BackOffPeriod time.Duration
	// BackOffJitter stretches each backoff by up to this fraction; default
	// 0.5. Negative disables jitter.
	BackOffJitter float64
	// Rand returns a float in [0, 1) for jitter; default math/rand/v2. It is
	// called with the workers' lock held and must be safe for concurrent use.
	Rand func() float64

	// MaxConcurrentSyncs bounds the worker goroutines Run keeps at once.
	// Zero (the default, like upstream) gives every pod with work its own
	// goroutine. A bound makes pods wait while as many syncs block (for
	// example in long grace periods).
	MaxConcurrentSyncs int

	// Clock provides Now for timestamps and the work queue; default the real
	// clock. The workers never sleep or start timers.
	Clock clock.PassiveClock
	// LookupPod, if set, lets the workers drop the pod of an idle worker:
	// after a successful sync of a running pod with nothing pending, the
	// worker keeps only the pod's name, namespace and termination grace
	// period (in its record: no allocation of its own), and when it next
	// needs the pod without being handed one (Resync, an orphan's
	// termination by SyncKnownPods, a kill without a pod) it asks LookupPod
	// for the latest pod with that UID. On a nil answer (the pod left its
	// source) a sync is skipped, never run without the pod's spec, and a
	// termination acts on a pod of that name, namespace, UID and
	// termination grace period only. (A pod marked for deletion is never
	// dropped, nor one whose grace period does not fit in 32 bits.) A host
	// that keeps pods in a compact form (virtualnode keeps them encoded) so
	// holds no decoded pod per idle pod; it should hand the pod with every
	// UpdatePod, a resync's included. It is called with the workers' lock
	// held: it must be quick and must not call the Workers. Nil (the
	// default, as the kubelet) keeps every pod.
	LookupPod func(uid types.UID) *v1.Pod

	// Recorder receives a FailedSync warning when the status barrier fails;
	// nil means no events.
	Recorder record.EventRecorder
	// Registerer receives the workers' metrics (see the package doc); nil
	// means no metrics. A registry that has them already is refused by
	// New.
	Registerer prometheus.Registerer
}

// withDefaults returns cfg with zero fields filled in, or an error wrapping
// ErrInvalidConfig.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Syncer == nil {
		return cfg, fmt.Errorf("%w: Syncer is required", ErrInvalidConfig)
	}
	if cfg.IsStatic == nil {
		cfg.IsStatic = kubetypes.IsStatic
	}
	if cfg.ResyncInterval == 0 {
		cfg.ResyncInterval = DefaultResyncInterval
	}
	if cfg.BackOffPeriod == 0 {
		cfg.BackOffPeriod = DefaultBackOffPeriod
	}
	if cfg.ResyncInterval < 0 || cfg.BackOffPeriod < 0 {
		return cfg, fmt.Errorf("%w: ResyncInterval %v and BackOffPeriod %v must not be negative", ErrInvalidConfig, cfg.ResyncInterval, cfg.BackOffPeriod)
	}
	if cfg.BackOffPeriod > cfg.ResyncInterval {
		return cfg, fmt.Errorf("%w: BackOffPeriod %v exceeds ResyncInterval %v", ErrInvalidConfig, cfg.BackOffPeriod, cfg.ResyncInterval)
	}
	if cfg.ResyncJitter == 0 {
		cfg.ResyncJitter = DefaultResyncJitter
	}
	if cfg.BackOffJitter == 0 {
		cfg.BackOffJitter = DefaultBackOffJitter
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.MaxConcurrentSyncs < 0 {
		return cfg, fmt.Errorf("%w: MaxConcurrentSyncs %d is negative", ErrInvalidConfig, cfg.MaxConcurrentSyncs)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return cfg, nil
}
