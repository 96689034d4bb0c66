package lease

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/kubeclient"
)

// Upstream kubelet defaults.
const (
	// DefaultNamespace is the namespace of node leases.
	DefaultNamespace = "kube-node-lease"
	// DefaultLeaseDuration is the kubelet's nodeLeaseDurationSeconds.
	DefaultLeaseDuration = 40 * time.Second
	// DefaultRenewJitter is the jitter upstream adds to each renew period.
	DefaultRenewJitter = 0.04
	// DefaultMaxUpdateAttempts is how many updates one renewal may try.
	DefaultMaxUpdateAttempts = 5
	// DefaultBackoffInitial is the first retry delay after a failed renewal.
	DefaultBackoffInitial = 200 * time.Millisecond
	// DefaultBackoffMax caps the retry delay.
	DefaultBackoffMax = 7 * time.Second
	// DefaultOwnerLookupInterval is how often the Node's UID is looked up
	// while it is unknown.
	DefaultOwnerLookupInterval = time.Minute
	// DefaultWorkers is the number of concurrent renewals.
	DefaultWorkers = 8
)

// NodeUIDFunc returns the UID of the Node named nodeName, used for the
// lease's owner reference. It returns an error (typically a NotFound API
// error) while the Node does not exist. It may be called concurrently for
// different names, must not block longer than ctx allows, and should read
// from a cache (an informer's lister) where the host has one.
type NodeUIDFunc func(ctx context.Context, nodeName string) (types.UID, error)

// Config configures a Controller. Zero values mean upstream kubelet defaults.
type Config struct {
	// Client reaches the API server; required. Pass a heartbeat client
	// (see HeartbeatRESTConfig) so a slow main client cannot delay
	// heartbeats: kubeclient.NewForConfig, or a client-go clientset through
	// kubeclient/clientset.Wrap.
	Client kubeclient.LeasesGetter

	// NodeName is the node whose lease is renewed. Leave it empty and use
	// Names (or Add at run time) to renew many leases from one controller.
	NodeName string
	// Names are further node names to renew, for agents that run many
	// virtual nodes in one process.
	Names []string

	// Namespace of the leases; default "kube-node-lease".
	Namespace string
	// HolderIdentity returns the holderIdentity written for a node name;
	// default: the node name itself, like the kubelet. Must be safe for
	// concurrent use.
	HolderIdentity func(nodeName string) string

	// LeaseDuration is written as spec.leaseDurationSeconds and must be a
	// whole number of seconds; default 40s.
	LeaseDuration time.Duration
	// RenewInterval is the period between renewals; default LeaseDuration/4
	// (10s). It must be shorter than LeaseDuration.
	RenewInterval time.Duration
	// RenewJitter stretches each renew period by up to this fraction, at
	// random; default 0.04 like upstream. Negative disables jitter.
	RenewJitter float64
	// Rand returns a float in [0, 1) for jitter; default math/rand/v2.
	// Must be safe for concurrent use.
	Rand func() float64
	// InitialSpread delays the first renewal of each name given to New by a
	// fixed per-name offset in [0, InitialSpread), so the renewals of a
	// fleet of names are spread over the interval instead of arriving
	// together. Zero (the default) renews them at once. Names added later
	// with Add are always renewed at once.
	InitialSpread time.Duration

	// BatchWindow lets Run renew, together with a lease that is due, every
	// lease due within this window after it: up to BatchWindow early, never
	// late. A controller of many leases then wakes about once per window
	// rather than once per lease, and its requests go out back to back,
	// which costs less CPU per renewal. Zero (the default) renews each
	// lease on its own due time, like the kubelet. It must be shorter than
	// half of RenewInterval.
	BatchWindow time.Duration

	// RequestTimeout bounds each API request; default RenewInterval, like the
	// kubelet's heartbeat client.
	RequestTimeout time.Duration
	// MaxUpdateAttempts bounds the updates of one renewal that hit a
	// conflict; default 5.
	MaxUpdateAttempts int
	// BackoffInitial and BackoffMax bound the exponential delay between
	// failed renewals; defaults 200ms and 7s.
	BackoffInitial, BackoffMax time.Duration

	// NodeUID finds the Node's UID for the owner reference. Optional: without
	// it, and without SetNodeUID, leases carry no owner reference. It is
	// called only while the UID is unknown, at most once per
	// OwnerLookupInterval per name, never on the renewal hot path.
	NodeUID NodeUIDFunc
	// OwnerLookupInterval is the minimum time between NodeUID calls for a
	// name whose Node was not found; default 1m.
	OwnerLookupInterval time.Duration

	// OnRepeatedFailure is called after the second and each further
	// consecutive failed attempt for a name (for example to close idle
	// connections of the heartbeat client); a renewal cut short by its
	// context being done is not reported. It is called from a worker
	// goroutine, possibly concurrently for different names, and must not
	// block.
	OnRepeatedFailure func(nodeName string, err error)

	// Workers bounds the renewals in flight; default 8.
	Workers int
	// Clock drives every period, backoff and timeout; default the real
	// clock.
	Clock clock.WithTicker
	// Registerer receives the controller's metrics; nil means no metrics.
	Registerer prometheus.Registerer
}

// withDefaults returns cfg with zero fields filled in, or an error for
// invalid values.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Client == nil {
		return cfg, fmt.Errorf("%w: Client is required", ErrInvalidConfig)
	}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if errs := validation.IsDNS1123Label(cfg.Namespace); len(errs) > 0 {
		return cfg, fmt.Errorf("%w: Namespace %q: %s", ErrInvalidConfig, cfg.Namespace, errs[0])
	}
	for _, n := range cfg.allNames() {
		if err := validateName(n); err != nil {
			return cfg, err
		}
	}
	if cfg.HolderIdentity == nil {
		cfg.HolderIdentity = func(name string) string { return name }
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.LeaseDuration < time.Second || cfg.LeaseDuration%time.Second != 0 {
		return cfg, fmt.Errorf("%w: LeaseDuration %v must be a positive whole number of seconds", ErrInvalidConfig, cfg.LeaseDuration)
	}
	if cfg.RenewInterval == 0 {
		cfg.RenewInterval = cfg.LeaseDuration / 4
	}
	if cfg.RenewInterval < 0 || cfg.RenewInterval >= cfg.LeaseDuration {
		return cfg, fmt.Errorf("%w: RenewInterval %v must be positive and shorter than LeaseDuration %v", ErrInvalidConfig, cfg.RenewInterval, cfg.LeaseDuration)
	}
	if cfg.RenewJitter == 0 {
		cfg.RenewJitter = DefaultRenewJitter
	}
	if cfg.RenewJitter < 0 {
		cfg.RenewJitter = 0
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.InitialSpread < 0 {
		return cfg, fmt.Errorf("%w: InitialSpread %v is negative", ErrInvalidConfig, cfg.InitialSpread)
	}
	if cfg.BatchWindow < 0 || cfg.BatchWindow >= cfg.RenewInterval/2 {
		return cfg, fmt.Errorf("%w: BatchWindow %v must be between 0 and half of RenewInterval %v", ErrInvalidConfig, cfg.BatchWindow, cfg.RenewInterval)
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = cfg.RenewInterval
	}
	if cfg.MaxUpdateAttempts == 0 {
		cfg.MaxUpdateAttempts = DefaultMaxUpdateAttempts
	}
	if cfg.BackoffInitial == 0 {
		cfg.BackoffInitial = DefaultBackoffInitial
	}
	if cfg.BackoffMax == 0 {
		cfg.BackoffMax = DefaultBackoffMax
	}
	if cfg.OwnerLookupInterval == 0 {
		cfg.OwnerLookupInterval = DefaultOwnerLookupInterval
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	switch {
	case cfg.RequestTimeout < 0:
		return cfg, fmt.Errorf("%w: RequestTimeout %v is negative", ErrInvalidConfig, cfg.RequestTimeout)
	case cfg.MaxUpdateAttempts < 0:
		return cfg, fmt.Errorf("%w: MaxUpdateAttempts %d is negative", ErrInvalidConfig, cfg.MaxUpdateAttempts)
	case cfg.BackoffInitial < 0 || cfg.BackoffMax < cfg.BackoffInitial:
		return cfg, fmt.Errorf("%w: backoff %v→%v must be positive and increasing", ErrInvalidConfig, cfg.BackoffInitial, cfg.BackoffMax)
	case cfg.OwnerLookupInterval < 0:
		return cfg, fmt.Errorf("%w: OwnerLookupInterval %v is negative", ErrInvalidConfig, cfg.OwnerLookupInterval)
	case cfg.Workers < 0:
		return cfg, fmt.Errorf("%w: Workers %d is negative", ErrInvalidConfig, cfg.Workers)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return cfg, nil
}

func (cfg Config) allNames() []string {
	names := make([]string, 0, len(cfg.Names)+1)
	if cfg.NodeName != "" {
		names = append(names, cfg.NodeName)
	}
	return append(names, cfg.Names...)
}

// validateName checks that a node name is a valid Lease name.
func validateName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty node name", ErrInvalidConfig)
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%w: node name %q: %s", ErrInvalidConfig, name, errs[0])
	}
	return nil
}
