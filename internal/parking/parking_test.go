package parking

import (
	"testing"
	"time"
)

func TestState(t *testing.T) {
	var p State
	if _, ok := p.Next(); ok {
		t.Fatal("zero value is not parked")
	}
	at := time.Unix(100, 0)
	p.Park(at, false, false)
	if n, ok := p.Next(); !ok || !n.Equal(at) {
		t.Fatalf("parked: got %v %v", n, ok)
	}
	p.Wake()
	if _, ok := p.Next(); ok {
		t.Fatal("a pending wake-up means not waiting")
	}
	p.Park(at, true, false)
	if _, ok := p.Next(); !ok {
		t.Fatal("a deaf loop waits for its time even with a wake-up pending")
	}
	p.Park(time.Time{}, false, true)
	p.Park(at, false, false)
	if _, ok := p.Next(); !ok {
		t.Fatal("the wake-up was taken")
	}
}

func TestTickAfter(t *testing.T) {
	s := time.Unix(0, 0)
	for _, tc := range []struct{ now, want int64 }{{-1, 0}, {0, 10}, {9, 10}, {10, 20}, {35, 40}} {
		if got := TickAfter(s, time.Unix(tc.now, 0), 10*time.Second); !got.Equal(time.Unix(tc.want, 0)) {
			t.Errorf("TickAfter(now=%d) = %v, want %d", tc.now, got.Unix(), tc.want)
		}
	}
}
