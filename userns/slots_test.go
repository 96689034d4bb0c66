package userns

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSlots(t *testing.T) {
	for _, n := range []int{1, 2, 63, 64, 65, 130} {
		s := newSlots(n)
		// Every slot once, in order.
		for want := range n {
			got, ok := s.allocate()
			require.True(t, ok, "n=%d slot %d", n, want)
			require.Equal(t, want, got, "n=%d", n)
		}
		_, ok := s.allocate()
		require.False(t, ok, "n=%d: full", n)
		require.Equal(t, n, s.used)
		require.True(t, s.has(-1), "below the range counts as used")
		require.True(t, s.has(n), "past the range counts as used")

		// A freed slot is found after wrapping around.
		s.clear(0)
		got, ok := s.allocate()
		require.True(t, ok)
		require.Equal(t, 0, got, "n=%d", n)
		s.clear(n - 1)
		got, ok = s.allocate()
		require.True(t, ok)
		require.Equal(t, n-1, got, "n=%d", n)

		// Clearing out-of-range or free slots changes nothing.
		s.clear(-1)
		s.clear(n)
		require.Equal(t, n, s.used)
	}
}

func TestSlotsNextFit(t *testing.T) {
	s := newSlots(100)
	for range 3 {
		s.allocate() // 0, 1, 2
	}
	s.clear(1)
	got, _ := s.allocate()
	require.Equal(t, 3, got, "a released slot is not reused before the cursor wraps")
	s.set(4) // recorded from disk
	got, _ = s.allocate()
	require.Equal(t, 5, got, "recorded slots are skipped")
	s.next = 99
	got, _ = s.allocate()
	require.Equal(t, 99, got)
	got, _ = s.allocate()
	require.Equal(t, 1, got, "wraps to the lowest free slot")
}
