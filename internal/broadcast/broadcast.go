// Package broadcast wakes every goroutine waiting for a shared state to
// change: the test fakes use it to let tests wait without polling.
package broadcast

// Signal is closed-channel broadcast. Its methods are called with the
// owner's lock held; the zero value is ready.
type Signal struct{ ch chan struct{} }

// Wait returns a channel closed at the next Fire.
func (s *Signal) Wait() <-chan struct{} {
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Fire wakes the current waiters.
func (s *Signal) Fire() {
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
