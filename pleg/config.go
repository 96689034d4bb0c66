package pleg

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// Upstream kubelet defaults, and the nodekit defaults for knobs upstream
// does not have.
const (
	// DefaultRelistPeriod is the kubelet's genericPlegRelistPeriod.
	DefaultRelistPeriod = time.Second
	// DefaultRelistThreshold is the kubelet's genericPlegRelistThreshold.
	DefaultRelistThreshold = 3 * time.Minute
	// DefaultEventedRelistPeriod is the kubelet's eventedPlegRelistPeriod:
	// the safety-net relist while the event stream is connected.
	DefaultEventedRelistPeriod = 300 * time.Second
	// DefaultEventedRelistThreshold is the kubelet's
	// eventedPlegRelistThreshold.
	DefaultEventedRelistThreshold = 10 * time.Minute
	// DefaultEventChannelCapacity is the kubelet's plegChannelCapacity.
	DefaultEventChannelCapacity = 1000
	// DefaultStatusParallelism bounds the CRI status calls in flight during
	// one relist. Upstream fetches serially (1).
	DefaultStatusParallelism = 16
	// DefaultRuntimeRequestTimeout bounds each CRI call, like the kubelet's
	// runtimeRequestTimeout.
	DefaultRuntimeRequestTimeout = 2 * time.Minute
	// DefaultStreamBackoffInitial and DefaultStreamBackoffMax bound the delay
	// between reconnections of the event stream.
	DefaultStreamBackoffInitial = time.Second
	DefaultStreamBackoffMax     = time.Minute
	// DefaultEventBuffer is the capacity of the channel the event stream is
	// received on.
	DefaultEventBuffer = 1000
)

// PodUIDLabel is the label the kubelet puts on sandboxes and containers to
// name their pod. Single-pod relists list by it; the full relist uses it for
// containers whose sandbox is not listed.
const PodUIDLabel = "io.kubernetes.pod.uid"

// RuntimeService is the part of the CRI runtime service the generator uses.
// k8s.io/cri-api/pkg/apis.RuntimeService, which k8s.io/cri-client's
// NewRemoteRuntimeService returns, satisfies it. Methods are called
// concurrently (status calls from up to Config.StatusParallelism goroutines)
// and must honour ctx.
type RuntimeService interface {
	// ListPodSandbox lists sandboxes matching filter (nil: all).
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	// ListContainers lists containers matching filter (nil: all).
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	// PodSandboxStatus returns the status of one sandbox.
	PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	// ContainerStatus returns the status of one container.
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	// GetContainerEvents streams events to ch until ctx ends or the stream
	// breaks; established is called once the stream is open. Only used in
	// evented mode.
	GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error
}

// Config configures a Generator. Zero values mean upstream kubelet defaults.
type Config struct {
	// Runtime is the container runtime; required.
	Runtime RuntimeService

	// RelistPeriod is the time between full relists; default 1s.
	RelistPeriod time.Duration
	// RelistThreshold is how long without a completed full relist before
	// Healthy reports false; default 3m. It must exceed RelistPeriod.
	RelistThreshold time.Duration

	// Evented turns on evented mode: runtime container events trigger
	// single-pod relists, and full relists run every EventedRelistPeriod
	// while the stream is connected (RelistPeriod while it is down).
	Evented bool
	// EventedRelistPeriod is the safety-net relist period while the event
	// stream is connected; default 300s.
	EventedRelistPeriod time.Duration
	// EventedRelistThreshold replaces RelistThreshold while the event stream
	// is connected; default 10m. It must exceed EventedRelistPeriod.
	EventedRelistThreshold time.Duration
	// StreamBackoffInitial and StreamBackoffMax bound the exponential delay
	// between reconnections of the event stream; defaults 1s and 1m.
	StreamBackoffInitial, StreamBackoffMax time.Duration
	// EventBuffer is the capacity of the channel runtime events are received
	// on; default 1000. The channel is drained continuously.
	EventBuffer int

	// Cache, if set, is the cache the generator writes (and Cache returns),
	// so a host can hand its WaitNewerThan to pod workers before the
	// generator exists; nil means a new one. A cache has one generator.
	Cache *Cache

	// Sink, if set, receives every event instead of the Events channel:
	// called synchronously by Relist and RelistPod (so also by Run and by a
	// host driving them itself), one event at a time, in order. It must not
	// block; syncloop.Loop.HandlePLEGEvent is such a sink. Nil: the Events
	// channel.
	Sink func(PodLifecycleEvent)

	// EventChannelCapacity is the capacity of the Events channel; default
	// 1000. When it is full, events are coalesced, never dropped silently.
	EventChannelCapacity int
	// StatusParallelism bounds the CRI status calls in flight; default 16.
	// 1 fetches serially like upstream.
	StatusParallelism int
	// RuntimeRequestTimeout bounds each CRI call, on Clock; default 2m.
	RuntimeRequestTimeout time.Duration
	// DeliverContainerChanged delivers ContainerChanged events. Upstream
	// computes them but never delivers them; so does the default (false).
	DeliverContainerChanged bool
	// RuntimeName is the runtime's name as pod statuses write it in
	// container IDs ("containerd", CRI Version's RuntimeName); it becomes
	// the Type of events' container IDs. Optional: empty leaves Type empty
	// (containerid.ID.Same still matches typed IDs).
	RuntimeName string

	// Clock drives periods, timeouts, backoff and timestamps; default the
	// real clock.
	Clock clock.WithTicker
	// Registerer receives the metrics (see the package doc); nil means no
	// metrics. Registering on a registry that already has them is an
	// error from New.
	Registerer prometheus.Registerer
}

// withDefaults returns cfg with zero fields filled in, or an error wrapping
// ErrInvalidConfig.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Runtime == nil {
		return cfg, fmt.Errorf("%w: Runtime is required", ErrInvalidConfig)
	}
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"RelistPeriod", &cfg.RelistPeriod, DefaultRelistPeriod},
		{"RelistThreshold", &cfg.RelistThreshold, DefaultRelistThreshold},
		{"EventedRelistPeriod", &cfg.EventedRelistPeriod, DefaultEventedRelistPeriod},
		{"EventedRelistThreshold", &cfg.EventedRelistThreshold, DefaultEventedRelistThreshold},
		{"StreamBackoffInitial", &cfg.StreamBackoffInitial, DefaultStreamBackoffInitial},
		{"StreamBackoffMax", &cfg.StreamBackoffMax, DefaultStreamBackoffMax},
		{"RuntimeRequestTimeout", &cfg.RuntimeRequestTimeout, DefaultRuntimeRequestTimeout},
	}
	for _, d := range durations {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < 0 {
			return cfg, fmt.Errorf("%w: %s %v is negative", ErrInvalidConfig, d.name, *d.v)
		}
	}
	ints := []struct {
		name string
		v    *int
		def  int
	}{
		{"EventBuffer", &cfg.EventBuffer, DefaultEventBuffer},
		{"EventChannelCapacity", &cfg.EventChannelCapacity, DefaultEventChannelCapacity},
		{"StatusParallelism", &cfg.StatusParallelism, DefaultStatusParallelism},
	}
	for _, n := range ints {
		if *n.v == 0 {
			*n.v = n.def
		}
		if *n.v < 0 {
			return cfg, fmt.Errorf("%w: %s %d is negative", ErrInvalidConfig, n.name, *n.v)
		}
	}
	switch {
	case cfg.RelistThreshold <= cfg.RelistPeriod:
		return cfg, fmt.Errorf("%w: RelistThreshold %v must exceed RelistPeriod %v", ErrInvalidConfig, cfg.RelistThreshold, cfg.RelistPeriod)
	case cfg.EventedRelistThreshold <= cfg.EventedRelistPeriod:
		return cfg, fmt.Errorf("%w: EventedRelistThreshold %v must exceed EventedRelistPeriod %v", ErrInvalidConfig, cfg.EventedRelistThreshold, cfg.EventedRelistPeriod)
	case cfg.StreamBackoffMax < cfg.StreamBackoffInitial:
		return cfg, fmt.Errorf("%w: StreamBackoffMax %v is below StreamBackoffInitial %v", ErrInvalidConfig, cfg.StreamBackoffMax, cfg.StreamBackoffInitial)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return cfg, nil
}
