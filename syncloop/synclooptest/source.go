package synclooptest

import (
	"context"
	"errors"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/syncloop"
)

var _ syncloop.Source = (*Source)(nil)

// ErrSourceRunning is returned by Source.Run while another Run of the same
// Source is active.
var ErrSourceRunning = errors.New("synclooptest: source already running")

// Source is a fake syncloop.Source whose snapshots the test pushes. While
// Run is active Push delivers at once through the SetFunc the loop gave
// Run; snapshots pushed while it is not are queued and delivered, in
// order, when Run starts. A snapshot pushed while Run is returning may
// still reach the stopping loop. Create it with NewSource; all methods are
// safe for concurrent use.
type Source struct {
	name string

	mu      sync.Mutex
	set     syncloop.SetFunc
	runCtx  context.Context
	queue   [][]*v1.Pod
	failErr error
	failed  chan struct{}
}

// NewSource returns a Source named name (the loop writes it into the
// kubernetes.io/config.source annotation; names must be unique in a Loop).
func NewSource(name string) *Source {
	return &Source{name: name, failed: make(chan struct{}, 1)}
}

// Name implements syncloop.Source.
func (s *Source) Name() string { return s.name }

// Push sends a snapshot: the full set of the source's pods (none is an
// empty snapshot, which still makes the source ready). The pods are deep
// copied, so the test keeps ownership of its own. Push never blocks.
func (s *Source) Push(pods ...*v1.Pod) {
	snapshot := make([]*v1.Pod, len(pods))
	for i, p := range pods {
		snapshot[i] = p.DeepCopy()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set == nil {
		s.queue = append(s.queue, snapshot)
		return
	}
	// SetFunc never blocks, so holding the lock keeps snapshots in order.
	s.set(s.runCtx, snapshot)
}

// Fail makes Run return err: the active Run at once, else the next one
// after delivering the queued snapshots. An error not yet returned is
// replaced; Fail(nil) withdraws it. The loop stops when a source fails and
// returns the error, wrapped.
func (s *Source) Fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failErr = err
	select {
	case s.failed <- struct{}{}:
	default:
	}
}

// Running reports whether Run is active.
func (s *Source) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.set != nil
}

// Run implements syncloop.Source: it delivers the queued snapshots, then
// every pushed one, until ctx is done (it returns nil) or Fail is called
// (it returns the error). Only one Run may be active at a time; another
// returns ErrSourceRunning. Run starts no goroutine.
func (s *Source) Run(ctx context.Context, set syncloop.SetFunc) error {
	s.mu.Lock()
	if s.set != nil {
		s.mu.Unlock()
		return ErrSourceRunning
	}
	s.set, s.runCtx = set, ctx
	for _, snapshot := range s.queue {
		set(ctx, snapshot)
	}
	s.queue = nil
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.set, s.runCtx = nil, nil
		s.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.failed:
			s.mu.Lock()
			err := s.failErr
			s.failErr = nil
			s.mu.Unlock()
			if err != nil {
				return err
			}
		}
	}
}
