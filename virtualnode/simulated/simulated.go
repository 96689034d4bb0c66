package simulated

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// ErrInvalidConfig is wrapped by every configuration error of New.
var ErrInvalidConfig = errors.New("simulated: invalid config")

// Annotations read by the simulated provider.
const (
	// AnnotationExitAfter makes every container of the pod exit this long
	// (a Go duration, e.g. "30s") after it started running. Pods with
	// restartPolicy Never, or OnFailure and exit code 0, then complete;
	// others ignore it (the simulator does not model restarts).
	AnnotationExitAfter = "virtualnodes.nodekit.io/exit-after"
	// AnnotationExitCode is the exit code of those containers; default 0.
	AnnotationExitCode = "virtualnodes.nodekit.io/exit-code"
	// AnnotationStopAfter is how long the containers take to stop after
	// SIGTERM (a Go duration); default Config.StopDelay. A stop
	// that needs longer than the grace period is cut short at its end and
	// the containers report exit code 137.
	AnnotationStopAfter = "virtualnodes.nodekit.io/stop-after"
	// AnnotationLog is what every container of the pod writes to stdout
	// when it starts, after its "started container <name>" line (one log
	// line per line of the value). See Provider.ContainerLogs.
	AnnotationLog = "virtualnodes.nodekit.io/log"
	// AnnotationUsageCPU and AnnotationUsageMemory set what every running
	// container of the pod uses (quantities, e.g. "250m" and "64Mi");
	// without them a container uses its requests. See Provider.PodStats.
	AnnotationUsageCPU    = "virtualnodes.nodekit.io/usage-cpu"
	AnnotationUsageMemory = "virtualnodes.nodekit.io/usage-memory"
)

// Config configures the simulated provider.
type Config struct {
	// ReadyDelay is how long after creation a pod's containers run and are
	// ready; zero makes them ready at once.
	ReadyDelay time.Duration
	// StopDelay is how long containers take to stop after SIGTERM, unless
	// AnnotationStopAfter says otherwise; zero stops them at once.
	StopDelay time.Duration
	// PodCIDR is the range pod IPs are handed out from, in order; default
	// 10.64.0.0/10.
	PodCIDR netip.Prefix
	// Clock drives the delays; default the real clock.
	Clock clock.WithDelayedExecution
}

// Provider is a virtualnode.Provider whose pods exist only in memory: containers
// become ready after ReadyDelay, exit per AnnotationExitAfter and stop per
// AnnotationStopAfter within the grace period. It also serves deterministic
// logs (LogProvider) and a few built-in exec commands (ExecProvider). It is
// safe for concurrent use.
type Provider struct {
	cfg Config

	mu      sync.Mutex
	pods    map[types.UID]*simPod
	notify  func(types.UID)
	healthy error
	nextIP  uint32
	closed  bool
}

// simPod is the simulator's record of a pod, one per pod it runs: its
// times are instants and its address four bytes (PodCIDR is IPv4), its
// timers kept only while armed: 64 bytes (96 with a netip.Addr and a
// slice that kept fired timers too, 168 with time.Time fields).
type simPod struct {
	created instant
	readyAt instant
	exitAt  instant // zero: never exits
	stopped instant // zero: not stopped
	// ended, made only when a log follower waits (endedChan), is closed
	// once hasEnded is set.
	ended  chan struct{}
	timers *simTimers // nil: none armed
	// exitCode is the code the containers exit with, at exitAt.
	exitCode int32
	ip       [4]byte
	killed   bool // stopped at the end of the grace period
	// hasEnded is set once the containers have ended (exited or stopped)
	// or the pod is forgotten.
	hasEnded bool
}

// simTimers are a pod's armed timers: the one that makes it ready, the one
// that makes it exit.
type simTimers struct {
	ready, exit clock.Timer
}

// addr returns the pod's address.
func (p *simPod) addr() netip.Addr { return netip.AddrFrom4(p.ip) }

// instant is a time in Unix nanoseconds, zero for none: 8 bytes where a
// time.Time takes 24.
type instant int64

func at(t time.Time) instant {
	if t.IsZero() {
		return 0
	}
	return instant(t.UnixNano())
}

// time returns the instant as a UTC time.Time (the zero Time for none).
func (i instant) time() time.Time {
	if i == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(i)).UTC()
}

// markEnded records the end and closes ended, once. Call with the
// simulator's lock held.
func (p *simPod) markEnded() {
	if !p.hasEnded && p.ended != nil {
		close(p.ended)
	}
	p.hasEnded = true
}

// endedChan returns a channel closed once the containers have ended.
func (s *Provider) endedChan(p *simPod) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.ended == nil {
		p.ended = make(chan struct{})
		if p.hasEnded {
			close(p.ended)
		}
	}
	return p.ended
}

// New returns a simulated provider.
func New(cfg Config) (*Provider, error) {
	if cfg.ReadyDelay < 0 || cfg.StopDelay < 0 {
		return nil, fmt.Errorf("%w: negative ReadyDelay or StopDelay", ErrInvalidConfig)
	}
	if !cfg.PodCIDR.IsValid() {
		cfg.PodCIDR = netip.MustParsePrefix("10.64.0.0/10")
	}
	if !cfg.PodCIDR.Addr().Is4() {
		return nil, fmt.Errorf("%w: PodCIDR %s is not IPv4", ErrInvalidConfig, cfg.PodCIDR)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Provider{cfg: cfg, pods: make(map[types.UID]*simPod)}, nil
}

// NotifyPods implements virtualnode.PodNotifier.
func (s *Provider) NotifyPods(notify func(types.UID)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify = notify
}

// SetHealthy sets what Healthy returns: nil for healthy.
func (s *Provider) SetHealthy(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.healthy = err
}

// Healthy implements virtualnode.Provider.
func (s *Provider) Healthy() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.healthy
}

// Len returns how many pods the simulator remembers.
func (s *Provider) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pods)
}

// Close stops the simulator's pending timers; later notifications are
// dropped. Call it after the agent's Run returned.
func (s *Provider) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, p := range s.pods {
		p.stopTimers()
		p.markEnded()
	}
}

func (p *simPod) stopTimers() {
	if t := p.timers; t != nil {
		for _, tm := range []clock.Timer{t.ready, t.exit} {
			if tm != nil {
				tm.Stop()
			}
		}
	}
	p.timers = nil
}

// fired forgets the pod's timer that fired (ready or exit). Call with the
// simulator's lock held.
func (p *simPod) fired(exit bool) {
	t := p.timers
	if t == nil {
		return
	}
	if exit {
		t.exit = nil
	} else {
		t.ready = nil
	}
	if t.ready == nil && t.exit == nil {
		p.timers = nil
	}
}

// CreatePod implements virtualnode.Provider.
func (s *Provider) CreatePod(_ context.Context, pod *v1.Pod) error {
	exitAfter, exitCode, err := exitSpec(pod)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pods[pod.UID]; ok {
		return nil
	}
	now := s.cfg.Clock.Now()
	p := &simPod{created: at(now), readyAt: at(now.Add(s.cfg.ReadyDelay)), exitCode: exitCode}
	st := pod.Status
	ip, err := netip.ParseAddr(st.PodIP)
	if st.Phase == v1.PodRunning && err == nil && ip.Is4() && st.StartTime != nil {
		// Adopted: it ran under another replica (a shard taken over), and
		// runs on as it was, with its address and start time.
		p.created, p.readyAt, p.ip = at(st.StartTime.Time), at(now), ip.As4()
	} else {
		p.ip = s.allocIP().As4()
		if s.cfg.ReadyDelay > 0 {
			p.timers = &simTimers{ready: s.after(s.cfg.ReadyDelay, pod.UID, func() { p.fired(false) })}
		}
	}
	if exitAfter > 0 && exits(pod.Spec.RestartPolicy, exitCode) {
		p.exitAt = p.readyAt + instant(exitAfter)
		if p.timers == nil {
			p.timers = &simTimers{}
		}
		p.timers.exit = s.after(s.cfg.ReadyDelay+exitAfter, pod.UID, func() { p.fired(true); p.markEnded() })
	}
	s.pods[pod.UID] = p
	return nil
}

// after runs onFire (with s.mu held, unless the simulator is closed) and
// notifies the agent about uid once d has passed. Call with s.mu held.
func (s *Provider) after(d time.Duration, uid types.UID, onFire func()) clock.Timer {
	return s.cfg.Clock.AfterFunc(d, func() {
		s.mu.Lock()
		notify, closed := s.notify, s.closed
		if !closed {
			onFire()
		}
		s.mu.Unlock()
		if notify != nil && !closed {
			notify(uid)
		}
	})
}

func (s *Provider) allocIP() netip.Addr {
	base := s.cfg.PodCIDR.Masked().Addr().As4()
	n := binary.BigEndian.Uint32(base[:]) + 1 + s.nextIP
	s.nextIP = (s.nextIP + 1) % (1<<(32-s.cfg.PodCIDR.Bits()) - 2)
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], n)
	return netip.AddrFrom4(b)
}

func exits(policy v1.RestartPolicy, code int32) bool {
	return policy == v1.RestartPolicyNever || (policy == v1.RestartPolicyOnFailure && code == 0)
}

func exitSpec(pod *v1.Pod) (after time.Duration, code int32, err error) {
	if v, ok := pod.Annotations[AnnotationExitAfter]; ok {
		if after, err = time.ParseDuration(v); err != nil {
			return 0, 0, fmt.Errorf("annotation %s: %w", AnnotationExitAfter, err)
		}
	}
	if v, ok := pod.Annotations[AnnotationExitCode]; ok {
		c, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return 0, 0, fmt.Errorf("annotation %s: %w", AnnotationExitCode, err)
		}
		code = int32(c)
	}
	return after, code, nil
}

// DeletePod implements virtualnode.Provider: it waits on the clock for the containers'
// stop delay, cut short at the grace period.
func (s *Provider) DeletePod(ctx context.Context, pod *v1.Pod, gracePeriod time.Duration) error {
	stop := s.cfg.StopDelay
	if v, ok := pod.Annotations[AnnotationStopAfter]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("annotation %s: %w", AnnotationStopAfter, err)
		}
		stop = d
	}
	s.mu.Lock()
	p, ok := s.pods[pod.UID]
	if !ok || p.stopped != 0 {
		s.mu.Unlock()
		return nil
	}
	now := s.cfg.Clock.Now()
	if p.exitAt != 0 && !now.Before(p.exitAt.time()) {
		p.stopped = p.exitAt // exited on its own
		p.markEnded()
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	wait, killed := stop, false
	if stop > gracePeriod {
		wait, killed = gracePeriod, true
	}
	if wait > 0 {
		t := s.cfg.Clock.NewTimer(wait)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p.stopped, p.killed = at(s.cfg.Clock.Now()), killed
	p.stopTimers()
	p.markEnded()
	return nil
}

// ForgetPod implements virtualnode.Provider.
func (s *Provider) ForgetPod(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.pods[uid]; ok {
		p.stopTimers()
		p.markEnded()
		delete(s.pods, uid)
	}
}

// PodStatus implements virtualnode.Provider.
func (s *Provider) PodStatus(_ context.Context, pod *v1.Pod) (*v1.PodStatus, error) {
	s.mu.Lock()
	p, ok := s.pods[pod.UID]
	var snap simPod
	if ok {
		snap = *p
	}
	s.mu.Unlock()
	if !ok {
		return nil, nil
	}
	return simStatus(pod, &snap, s.cfg.Clock.Now()), nil
}
