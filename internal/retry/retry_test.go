package retry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoff(t *testing.T) {
	for _, tt := range []struct {
		failures int
		want     time.Duration
	}{{0, 0}, {-1, 0}, {1, 200 * time.Millisecond}, {2, 400 * time.Millisecond}, {5, 3200 * time.Millisecond}, {6, 6400 * time.Millisecond}, {7, 7 * time.Second}, {100, 7 * time.Second}} {
		require.Equal(t, tt.want, Backoff(tt.failures, 200*time.Millisecond, 7*time.Second), "failures=%d", tt.failures)
	}
}

func TestNext(t *testing.T) {
	var got []time.Duration
	d := time.Duration(0)
	for range 8 {
		d = Next(d, 100*time.Millisecond, 7*time.Second)
		got = append(got, d)
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 7000 * ms}, got)
	require.Equal(t, 7*time.Second, Next(7*time.Second, 100*ms, 7*time.Second), "stays at max")
	require.Equal(t, 5*time.Second, Next(3200*ms, 100*ms, 5*time.Second), "capped")
}

func TestJitter(t *testing.T) {
	require.Equal(t, 10*time.Second, Jitter(10*time.Second, 0, 0.9))
	require.Equal(t, 10*time.Second, Jitter(10*time.Second, -1, 0.9))
	require.Equal(t, 10*time.Second+200*time.Millisecond, Jitter(10*time.Second, 0.04, 0.5))
	require.Equal(t, 75*time.Second, Jitter(time.Minute, 0.5, 0.5))
	require.Equal(t, 15*time.Second, Jitter(10*time.Second, 0.5, 1))
	for r := 0.0; r < 1; r += 0.1 {
		d := Jitter(10*time.Second, 0.04, r)
		require.True(t, d >= 10*time.Second && d < 10400*time.Millisecond, d)
	}
}
