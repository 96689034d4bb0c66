package prober

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Upstream kubelet defaults and limits.
const (
	// DefaultUserAgent is the User-Agent of HTTP and gRPC probes, as a
	// v1.36 kubelet sends it.
	DefaultUserAgent = "kube-probe/1.36"
	// DefaultWorkers bounds the probes in flight. Upstream runs one
	// goroutine per probe and has no bound.
	DefaultWorkers = 64
	// MaxOutput caps the bytes kept from an HTTP body or exec output (10 KiB).
	MaxOutput = 10 << 10
	// MaxRedirects is how many same-host redirects an HTTP probe follows.
	MaxRedirects = 10
	// maxRetries is how often a probe whose handler errors is retried at
	// once, like upstream's maxProbeRetries.
	maxRetries = 3
	// restartGrace: containers started more than this before the manager
	// was created are treated as surviving a kubelet restart.
	restartGrace = 10 * time.Second
)

// CommandRunner runs a command in a container for exec probes. cri-client's
// RuntimeService (k8s.io/cri-client/pkg NewRemoteRuntimeService) satisfies
// it as is.
//
// containerID is the bare runtime ID (without "<runtime>://"). The runner
// should end the command after timeout; the prober also cancels ctx once
// timeout has passed on the injected clock. A non-zero exit code is reported
// as an error with an ExitStatus() int method (cri-client returns
// k8s.io/utils/exec.CodeExitError), a timeout as an error wrapping
// cri-client's ErrCommandTimedOut or context.DeadlineExceeded. It is called
// from worker goroutines, concurrently for different containers.
type CommandRunner interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error)
}

// Config configures a Manager. Zero values mean upstream kubelet defaults.
type Config struct {
	// Runner runs exec probes. Optional: without it exec probes error (a
	// Warning event each period, no result), as with a broken runtime.
	Runner CommandRunner
	// Recorder receives the "Unhealthy" and "ProbeWarning" Warning events of
	// failed, errored and warning probes, with upstream's messages.
	// Optional.
	Recorder record.EventRecorder
	// Registerer receives prober_probe_total (upstream's name and labels)
	// and nodekit_prober_probe_lateness_seconds; nil means no metrics.
	Registerer prometheus.Registerer

	// Sink, if set, receives every result change instead of the Updates
	// channels: called synchronously by the probe that changed the result
	// (under Run or RunOnce), never with a lock held. It must not block and
	// must be safe for concurrent use; syncloop's Loop.HandleProbeUpdate is
	// such a sink. Nil: the Updates channels, delivered while Run runs.
	Sink func(ProbeType, Update)

	// Workers bounds the probes in flight; default 64.
	Workers int
	// UserAgent is sent by HTTP probes (unless the probe sets its own) and
	// gRPC probes; default "kube-probe/1.36".
	UserAgent string

	// Clock drives schedules, initial delays and probe timeouts; default the
	// real clock. It should implement clock.WithDelayedExecution (the real
	// and the fake clock do); otherwise each timeout costs a goroutine.
	Clock clock.WithTicker
	// Rand returns a float in [0, 1) and places each new probe's first run
	// in its period; default math/rand/v2. Must be safe for concurrent use.
	Rand func() float64
}

func (cfg Config) withDefaults() (Config, error) {
	if cfg.Workers < 0 {
		return cfg, fmt.Errorf("%w: Workers %d is negative", ErrInvalidConfig, cfg.Workers)
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	if !validHeaderValue(cfg.UserAgent) {
		return cfg, fmt.Errorf("%w: UserAgent %q is not a valid header value", ErrInvalidConfig, cfg.UserAgent)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	return cfg, nil
}
