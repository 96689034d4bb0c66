package broadcast

import "testing"

func TestSignal(t *testing.T) {
	var s Signal
	s.Fire() // no waiter: nothing happens
	ch := s.Wait()
	if ch != s.Wait() {
		t.Fatal("waiters before a Fire share one channel")
	}
	s.Fire()
	select {
	case <-ch:
	default:
		t.Fatal("Fire wakes the waiters")
	}
	if s.Wait() == ch {
		t.Fatal("a new channel after a Fire")
	}
}
