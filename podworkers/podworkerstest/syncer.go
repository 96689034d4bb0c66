package podworkerstest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/internal/broadcast"
	"github.com/nodekit/nodekit/podworkers"
)

var _ podworkers.Syncer = (*Syncer)(nil)

// Method names a podworkers.Syncer method, for scripting and counting calls.
type Method string

// The methods of podworkers.Syncer.
const (
	// MethodSyncPod is Syncer.SyncPod.
	MethodSyncPod Method = "SyncPod"
	// MethodSyncTerminatingPod is Syncer.SyncTerminatingPod.
	MethodSyncTerminatingPod Method = "SyncTerminatingPod"
	// MethodSyncTerminatingRuntimePod is Syncer.SyncTerminatingRuntimePod.
	MethodSyncTerminatingRuntimePod Method = "SyncTerminatingRuntimePod"
	// MethodSyncTerminatedPod is Syncer.SyncTerminatedPod.
	MethodSyncTerminatedPod Method = "SyncTerminatedPod"
)

// Call is one recorded Syncer call. Fields that do not apply to Method are
// zero. Pods are the ones the workers passed, not copies: do not mutate
// them. Compare calls by field or with Transcript, since StatusFunc makes
// reflect.DeepEqual fail for calls that carry one.
type Call struct {
	// Method is the method called.
	Method Method
	// UID is the pod's UID (the RuntimePod's for
	// SyncTerminatingRuntimePod).
	UID types.UID
	// UpdateType is the update type given to SyncPod.
	UpdateType podworkers.UpdateType
	// GracePeriod is the grace period in seconds given to
	// SyncTerminatingPod.
	GracePeriod int64
	// Pod is the pod given to every method but SyncTerminatingRuntimePod.
	Pod *v1.Pod
	// MirrorPod is the mirror pod given to SyncPod, if any.
	MirrorPod *v1.Pod
	// RuntimePod is the pod given to SyncTerminatingRuntimePod.
	RuntimePod *podworkers.RuntimePod
	// StatusFunc is the status func given to SyncTerminatingPod, if any; a
	// test may apply it to a status to check what a kill asked for.
	StatusFunc podworkers.StatusFunc
}

// String renders the call as one transcript line: "SyncPod create <uid>",
// "SyncTerminatingPod <uid> grace=30", "SyncTerminatingRuntimePod <uid>" or
// "SyncTerminatedPod <uid>".
func (c Call) String() string {
	switch c.Method {
	case MethodSyncPod:
		return fmt.Sprintf("%s %s %s", c.Method, c.UpdateType, c.UID)
	case MethodSyncTerminatingPod:
		return fmt.Sprintf("%s %s grace=%d", c.Method, c.UID, c.GracePeriod)
	default:
		return fmt.Sprintf("%s %s", c.Method, c.UID)
	}
}

// Transcript renders calls with Call.String, one line each, for comparing
// a whole sequence in one assertion.
func Transcript(calls []Call) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.String()
	}
	return out
}

// key scripts one method for one pod.
type key struct {
	method Method
	uid    types.UID
}

// Syncer is a fake podworkers.Syncer. It records every call when the call
// starts, in order; then, if the method is blocked for the pod (Block),
// waits until it is released or ctx is done; then returns the result
// scripted for the method and pod (SetError, SetTerminal), by default
// success. Results are read when the call proceeds, so a test may change
// them while a call is blocked.
//
// The zero value is ready to use. All methods are safe for concurrent use.
type Syncer struct {
	mu       sync.Mutex
	calls    []Call
	inFlight int
	errs     map[key]error
	terminal map[types.UID]bool
	blocks   map[key]*gate
	changed  broadcast.Signal
}

// SyncPod implements podworkers.Syncer. It returns the error scripted with
// SetError, else the terminal value scripted with SetTerminal.
func (s *Syncer) SyncPod(ctx context.Context, updateType podworkers.UpdateType, pod, mirrorPod *v1.Pod) (terminal bool, err error) {
	return s.do(ctx, Call{Method: MethodSyncPod, UID: pod.UID, UpdateType: updateType, Pod: pod, MirrorPod: mirrorPod})
}

// SyncTerminatingPod implements podworkers.Syncer. It returns the error
// scripted with SetError; it never calls statusFn (the recorded Call
// carries it).
func (s *Syncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, gracePeriod int64, statusFn podworkers.StatusFunc) error {
	_, err := s.do(ctx, Call{Method: MethodSyncTerminatingPod, UID: pod.UID, GracePeriod: gracePeriod, Pod: pod, StatusFunc: statusFn})
	return err
}

// SyncTerminatingRuntimePod implements podworkers.Syncer. It returns the
// error scripted with SetError for the runtime pod's UID.
func (s *Syncer) SyncTerminatingRuntimePod(ctx context.Context, pod *podworkers.RuntimePod) error {
	_, err := s.do(ctx, Call{Method: MethodSyncTerminatingRuntimePod, UID: pod.UID, RuntimePod: pod})
	return err
}

// SyncTerminatedPod implements podworkers.Syncer. It returns the error
// scripted with SetError.
func (s *Syncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod) error {
	_, err := s.do(ctx, Call{Method: MethodSyncTerminatedPod, UID: pod.UID, Pod: pod})
	return err
}

// do records c, waits while c's method is blocked for its pod, and returns
// the scripted result.
func (s *Syncer) do(ctx context.Context, c Call) (terminal bool, err error) {
	k := key{c.Method, c.UID}
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.inFlight++
	g := s.blocks[k]
	s.changed.Fire()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.changed.Fire()
		s.mu.Unlock()
	}()
	if g != nil {
		select {
		case <-g.ch:
		case <-ctx.Done():
			return false, fmt.Errorf("podworkerstest: blocked %s of pod %s: %w", c.Method, c.UID, ctx.Err())
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.errs[k]; err != nil {
		return false, err
	}
	return c.Method == MethodSyncPod && s.terminal[c.UID], nil
}

// SetError makes every later call of method for the pod uid return err
// (SyncPod returns false with it); nil restores success. A method name
// that is not one of the Method constants matches no call.
func (s *Syncer) SetError(method Method, uid types.UID, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		delete(s.errs, key{method, uid})
		return
	}
	if s.errs == nil {
		s.errs = map[key]error{}
	}
	s.errs[key{method, uid}] = err
}

// SetTerminal sets what SyncPod reports as terminal for the pod uid when
// it succeeds; a terminal pod moves on to terminating. The default is
// false: the pod keeps running.
func (s *Syncer) SetTerminal(uid types.UID, terminal bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !terminal {
		delete(s.terminal, uid)
		return
	}
	if s.terminal == nil {
		s.terminal = map[types.UID]bool{}
	}
	s.terminal[uid] = true
}

// Block holds every call of method for the pod uid that starts from now
// on, until release is called or the call's ctx is done. A call whose ctx
// ends first returns an error wrapping ctx.Err() (context.Canceled when the
// workers cancel it), which the workers treat as an interrupted sync. The
// call is recorded and counted by InFlight while it is held, so a test can
// wait for it with WaitInFlight and observe the workers' state meanwhile.
//
// release lets held calls proceed and removes the block; calling it more
// than once is harmless. Blocking a method and pod already blocked returns
// a release of the same block.
func (s *Syncer) Block(method Method, uid types.UID) (release func()) {
	k := key{method, uid}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.blocks[k]
	if g == nil {
		g = newGate()
		if s.blocks == nil {
			s.blocks = map[key]*gate{}
		}
		s.blocks[k] = g
	}
	return func() {
		s.mu.Lock()
		if s.blocks[k] == g {
			delete(s.blocks, k)
		}
		s.mu.Unlock()
		g.open()
	}
}

// Calls returns a copy of the recorded calls, in the order they started.
func (s *Syncer) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Count returns how many calls of method were recorded.
func (s *Syncer) Count(method Method) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c.Method == method {
			n++
		}
	}
	return n
}

// Reset forgets the recorded calls; scripted results and blocks stay.
func (s *Syncer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}

// InFlight returns how many calls have started and not yet returned.
func (s *Syncer) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// WaitCalls waits until at least n calls are recorded (counted since the
// last Reset) and returns a copy of them, for tests of Workers.Run. Calls
// are recorded when they start: the workers may not have acted on the
// result yet. When ctx is done first it returns the calls recorded so far
// and an error wrapping ctx.Err().
func (s *Syncer) WaitCalls(ctx context.Context, n int) ([]Call, error) {
	for {
		s.mu.Lock()
		calls := slices.Clone(s.calls)
		ch := s.changed.Wait()
		s.mu.Unlock()
		if len(calls) >= n {
			return calls, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return calls, fmt.Errorf("podworkerstest: waiting for %d calls, have %d: %w", n, len(calls), ctx.Err())
		}
	}
}

// WaitInFlight waits until at least n calls are in flight (see InFlight),
// typically calls held by Block. It returns an error wrapping ctx.Err() if
// ctx is done first.
func (s *Syncer) WaitInFlight(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		have := s.inFlight
		ch := s.changed.Wait()
		s.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("podworkerstest: waiting for %d calls in flight, have %d: %w", n, have, ctx.Err())
		}
	}
}
