package podworkerstest

import "sync"

// signal wakes every goroutine waiting for a fake's state to change. Its
// methods are called with the owner's lock held.
type signal struct{ ch chan struct{} }

// wait returns a channel closed at the next fire.
func (s *signal) wait() <-chan struct{} {
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// fire wakes the current waiters.
func (s *signal) fire() {
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// gate holds calls until it is opened; opening twice is harmless.
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }
