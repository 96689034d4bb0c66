package images

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"
	"k8s.io/utils/clock"
)

// ErrInvalidConfig wraps every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("images: invalid config")

// The kubelet's waiting reasons for image problems.
const (
	ReasonErrImagePull      = "ErrImagePull"
	ReasonImagePullBackOff  = "ImagePullBackOff"
	ReasonErrImageNeverPull = "ErrImageNeverPull"
)

// Pull back-off of the kubelet: per pod and image, 10s doubling to 5m.
const (
	backoffInitial = 10 * time.Second
	backoffMax     = 5 * time.Minute
)

// Error is an image problem with the waiting reason and message the
// container's status shows.
type Error struct {
	Reason  string
	Message string
}

// Error is the reason and the message.
func (e *Error) Error() string { return e.Reason + ": " + e.Message }

// Event is what Ensure reports along the way, for the caller to record
// on the container: type (Normal, Warning), reason and message.
type Event struct {
	Type, Reason, Message string
}

// Config configures a Puller.
type Config struct {
	// Images is the runtime's image service. Required.
	Images criapi.ImageManagerService
	// Clock drives back-off and pull timing. Default the real clock.
	Clock clock.Clock
	// MaxParallelPulls bounds the pulls in flight across all pods. Zero
	// serializes them, the kubelet's default (serializeImagePulls); a
	// negative value leaves them unbounded.
	MaxParallelPulls int
	// Pulls, if set, is told when a pull for a pod starts (before it waits
	// for a pull slot) and when a pull succeeded or the image turned out
	// present after all; podstartup.Tracker is one (the pod startup SLI
	// leaves pulls out). It must not block.
	Pulls PullObserver
	// Registerer receives kubelet_image_pull_duration_seconds (nil: none):
	// each successful pull's time, its wait for a pull slot included, by
	// the pulled image's size as the runtime reports it.
	Registerer prometheus.Registerer
}

// PullObserver is what Config.Pulls is told.
type PullObserver interface {
	ImagePullStarted(podUID types.UID)
	ImagePullFinished(podUID types.UID)
}

// Puller makes images present. It is safe for concurrent use; pulls wait
// for a slot as Config.MaxParallelPulls says.
type Puller struct {
	cfg   Config
	slots chan struct{} // nil: unbounded

	// backoff delays the next pull of a pod's image after a failure
	// (client-go's keyed back-off on cfg.Clock), by pod UID + image.
	backoff *flowcontrol.Backoff
	mu      sync.Mutex
	lastErr map[string]string // the last failure of each key in back-off

	pullDuration *prometheus.HistogramVec
}

// New validates cfg and returns a Puller.
func New(cfg Config) (*Puller, error) {
	if cfg.Images == nil {
		return nil, fmt.Errorf("%w: Images is required", ErrInvalidConfig)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	h, err := newPullDuration(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", ErrInvalidConfig, err)
	}
	p := &Puller{cfg: cfg, backoff: flowcontrol.NewFakeBackOff(backoffInitial, backoffMax, cfg.Clock), lastErr: map[string]string{},
		pullDuration: h}
	switch n := cfg.MaxParallelPulls; {
	case n == 0:
		p.slots = make(chan struct{}, 1)
	case n > 0:
		p.slots = make(chan struct{}, n)
	}
	return p, nil
}

// Request is one container's image to make present.
type Request struct {
	Pod       *v1.Pod
	Container *v1.Container
	// Keyring holds the pod's pull credentials; nil pulls anonymously.
	Keyring *Keyring
	// Sandbox is the pod's sandbox config, passed to the runtime's pull.
	Sandbox *runtimeapi.PodSandboxConfig
}

// Ensure makes the request's image present according to its pull policy
// and returns the runtime's reference of it. A failure is an *Error with
// the kubelet's reason; while a failed pull backs off, Ensure does not
// pull and returns ImagePullBackOff. event receives what happened.
func (p *Puller) Ensure(ctx context.Context, r Request, event func(Event)) (string, error) {
	c := r.Container
	spec := &runtimeapi.ImageSpec{Image: c.Image, Annotations: r.Sandbox.GetAnnotations()}
	policy := c.ImagePullPolicy
	if policy == "" {
		policy = v1.PullIfNotPresent
	}
	if policy != v1.PullAlways {
		st, err := p.cfg.Images.ImageStatus(ctx, spec, false)
		if err == nil && st.GetImage() != nil {
			event(Event{v1.EventTypeNormal, "Pulled", fmt.Sprintf("Container image %q already present on machine", c.Image)})
			if p.cfg.Pulls != nil {
				p.cfg.Pulls.ImagePullFinished(r.Pod.UID) // pulled meanwhile by another pod
			}
			return st.GetImage().GetId(), nil
		}
	}
	if policy == v1.PullNever {
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		event(Event{v1.EventTypeWarning, ReasonErrImageNeverPull, msg})
		return "", &Error{ReasonErrImageNeverPull, msg}
	}
	key := string(r.Pod.UID) + "_" + c.Image
	if last, waiting := p.inBackoff(key); waiting {
		msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
		event(Event{v1.EventTypeNormal, "BackOff", msg})
		if last != "" {
			msg += ": " + last
		}
		return "", &Error{ReasonImagePullBackOff, msg}
	}
	if p.cfg.Pulls != nil {
		p.cfg.Pulls.ImagePullStarted(r.Pod.UID)
	}
	event(Event{v1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q", c.Image)})
	start := p.cfg.Clock.Now()
	ref, pulling, err := p.pull(ctx, spec, r.Keyring.Lookup(c.Image), r.Sandbox)
	if err != nil {
		event(Event{v1.EventTypeWarning, "Failed", fmt.Sprintf("Failed to pull image %q: %v", c.Image, err)})
		reason, msg := pullFailure(c.Image, err)
		// The back-off's message carries the failure, as the kubelet's.
		p.failed(key, reason+": "+msg)
		event(Event{v1.EventTypeWarning, "Failed", "Error: " + reason})
		return "", &Error{reason, msg}
	}
	p.succeeded(key)
	if p.cfg.Pulls != nil {
		p.cfg.Pulls.ImagePullFinished(r.Pod.UID)
	}
	took := p.cfg.Clock.Since(start)
	size, bytes := "", uint64(0)
	if st, err := p.cfg.Images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}, false); err == nil && st.GetImage() != nil {
		bytes = st.GetImage().GetSize()
		size = fmt.Sprintf(" Image size: %d bytes.", bytes)
	}
	p.pullDuration.WithLabelValues(sizeBucket(bytes)).Observe(took.Truncate(time.Millisecond).Seconds())
	event(Event{v1.EventTypeNormal, "Pulled", fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting).%s",
		c.Image, pulling.Round(time.Millisecond), took.Round(time.Millisecond), size)})
	return ref, nil
}

// pullFailure is the waiting reason and message of a failed pull, as the
// kubelet's evalCRIPullErr: the runtime's error, or for a runtime that
// says the registry is unavailable or a signature failed validation, that
// reason with the rest of its message.
func pullFailure(image string, err error) (reason, msg string) {
	text := err.Error()
	for _, e := range []struct {
		err  error
		what string
	}{{crierrors.ErrRegistryUnavailable, "the registry is unavailable"}, {crierrors.ErrSignatureValidationFailed, "the signature validation failed"}} {
		if rest, ok := strings.CutPrefix(text, e.err.Error()); ok {
			return e.err.Error(), fmt.Sprintf("image pull failed for %s because %s%s", image, e.what, rest)
		}
	}
	return ReasonErrImagePull, text
}

// pull waits for a pull slot, then tries each credential in turn, then
// (with none) anonymously; the last error is returned when all fail.
// pulling is the time spent pulling, without the wait.
func (p *Puller) pull(ctx context.Context, spec *runtimeapi.ImageSpec, auths []*runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (ref string, pulling time.Duration, err error) {
	if p.slots != nil {
		select {
		case p.slots <- struct{}{}:
			defer func() { <-p.slots }()
		case <-ctx.Done():
			return "", 0, ctx.Err()
		}
	}
	start := p.cfg.Clock.Now()
	defer func() { pulling = p.cfg.Clock.Since(start) }()
	if len(auths) == 0 {
		auths = []*runtimeapi.AuthConfig{nil}
	}
	for _, a := range auths {
		if ref, err = p.cfg.Images.PullImage(ctx, spec, a, sandbox); err == nil {
			return ref, 0, nil
		}
	}
	return "", 0, err
}

// inBackoff: a pull of key failed less than its back-off ago.
func (p *Puller) inBackoff(key string) (lastErr string, waiting bool) {
	if !p.backoff.IsInBackOffSinceUpdate(key, p.cfg.Clock.Now()) {
		return "", false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr[key], true
}

func (p *Puller) failed(key, msg string) {
	p.backoff.GC() // entries idle for twice the longest back-off: deleted pods leave nothing behind
	p.backoff.Next(key, p.cfg.Clock.Now())
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.lastErr {
		if p.backoff.Get(k) == 0 {
			delete(p.lastErr, k)
		}
	}
	p.lastErr[key] = msg
}

func (p *Puller) succeeded(key string) {
	p.backoff.DeleteEntry(key)
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.lastErr, key)
}
