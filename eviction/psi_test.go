package eviction

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestNewPSINotifierValidation(t *testing.T) {
	for _, cfg := range []PSIConfig{
		{Window: 100 * time.Millisecond},
		{Window: 11 * time.Second},
		{Stall: 2 * time.Second},
		{Stall: -1},
	} {
		_, err := NewPSINotifier(cfg)
		require.ErrorIs(t, err, ErrInvalidConfig)
	}
	n, err := NewPSINotifier(PSIConfig{})
	require.NoError(t, err)
	require.Equal(t, "some 100000 1000000", n.trigger())
	n, err = NewPSINotifier(PSIConfig{Full: true, Stall: 150 * time.Millisecond, Window: 2 * time.Second})
	require.NoError(t, err)
	require.Equal(t, "full 150000 2000000", n.trigger())
}

// TestPSINotifierFallsBackToPolling uses a path that is not a PSI file: the
// notifier degrades to notifying every FallbackInterval on the clock.
func TestPSINotifierFallsBackToPolling(t *testing.T) {
	defer goleak.VerifyNone(t)
	notPSI := filepath.Join(t.TempDir(), "memory")
	require.NoError(t, os.WriteFile(notPSI, nil, 0o600))
	for _, path := range []string{notPSI, filepath.Join(t.TempDir(), "missing")} {
		fc := clocktesting.NewFakeClock(epoch)
		n, err := NewPSINotifier(PSIConfig{Path: path, Clock: fc})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		notified := make(chan struct{}, 10)
		done := make(chan error, 1)
		go func() { done <- n.Run(ctx, func() { notified <- struct{}{} }) }()
		waitWaiters(t, fc)
		require.Empty(t, notified)
		fc.Step(DefaultFallbackInterval)
		waitFor(t, notified)
		cancel()
		require.NoError(t, waitFor(t, done))
	}
}

// TestPSINotifierArmsOnThisHost arms a real trigger on /proc/pressure/memory
// and checks that cancellation ends the poll and leaves no goroutine.
func TestPSINotifierArmsOnThisHost(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("PSI is Linux only")
	}
	if _, err := os.Stat(DefaultPSIPath); err != nil {
		t.Skipf("no PSI on this host: %v", err)
	}
	defer goleak.VerifyNone(t)
	fc := clocktesting.NewFakeClock(epoch)
	n, err := NewPSINotifier(PSIConfig{Clock: fc})
	require.NoError(t, err)
	armed := make(chan struct{})
	n.armed = func() { close(armed) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.watch(ctx, func() {}) }()
	select {
	case <-armed:
	case err := <-done:
		cancel()
		t.Skipf("PSI triggers unavailable on this host (Run degrades to polling): %v", err)
	case <-time.After(testTimeout):
		t.Fatal("not armed")
	}
	require.False(t, fc.HasWaiters(), "armed PSI does not poll")
	cancel()
	require.NoError(t, waitFor(t, done))
}
