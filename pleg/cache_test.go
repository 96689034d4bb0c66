package pleg

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/types"
)

// waitAsync runs WaitNewerThan in a goroutine and returns its result channel.
func waitAsync(c *Cache, ctx context.Context, uid string, min time.Time) chan error {
	errc := make(chan error, 1)
	go func() { errc <- c.WaitNewerThan(ctx, types.UID(uid), min) }()
	return errc
}

func requireBlocked(t *testing.T, c *Cache, n int, errc chan error) {
	t.Helper()
	require.Eventually(t, func() bool { return c.waiting() == n }, 5*time.Second, time.Millisecond)
	select {
	case err := <-errc:
		t.Fatalf("waiter released early: %v", err)
	default:
	}
}

func requireReleased(t *testing.T, errc chan error, want error) {
	t.Helper()
	select {
	case err := <-errc:
		if want == nil {
			require.NoError(t, err)
		} else {
			require.ErrorIs(t, err, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not released")
	}
}

func TestCacheGetAndSet(t *testing.T) {
	c := NewCache()
	st, err := c.Get("a")
	require.NoError(t, err)
	require.Equal(t, &PodStatus{ID: "a"}, st, "an unknown pod has an empty status")

	s1 := &PodStatus{ID: "a", Name: "one"}
	require.True(t, c.Set("a", s1, nil, epoch.Add(2*time.Second)))
	require.False(t, c.Set("a", &PodStatus{ID: "a", Name: "older"}, nil, epoch.Add(time.Second)), "older data is refused")
	boom := errors.New("boom")
	require.True(t, c.Set("a", s1, boom, epoch.Add(2*time.Second)))
	st, err = c.Get("a")
	require.ErrorIs(t, err, boom)
	require.Same(t, s1, st)

	c.Delete("a")
	st, err = c.Get("a")
	require.NoError(t, err)
	require.Empty(t, st.Name)
}

func TestCacheBarrier(t *testing.T) {
	defer goleak.VerifyNone(t)
	t0 := epoch
	tests := []struct {
		name    string
		release func(c *Cache)
	}{
		{"Set newer", func(c *Cache) { c.Set("a", &PodStatus{ID: "a"}, nil, t0.Add(time.Second)) }},
		{"SetObservedTime newer", func(c *Cache) { c.SetObservedTime("a", t0.Add(time.Second)) }},
		{"global timestamp newer", func(c *Cache) { c.UpdateTime(t0.Add(time.Second)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache()
			c.UpdateTime(t0.Add(-time.Second))
			errc := waitAsync(c, context.Background(), "a", t0)
			requireBlocked(t, c, 1, errc)

			// Data at exactly minTime is not newer.
			c.Set("a", &PodStatus{ID: "a"}, nil, t0)
			c.SetObservedTime("a", t0)
			c.UpdateTime(t0)
			requireBlocked(t, c, 1, errc)

			// Other pods do not release it.
			c.Set("b", &PodStatus{ID: "b"}, nil, t0.Add(time.Hour))
			requireBlocked(t, c, 1, errc)

			tt.release(c)
			requireReleased(t, errc, nil)
			require.Zero(t, c.waiting())

			// Fresh data answers at once.
			require.NoError(t, c.WaitNewerThan(context.Background(), "a", t0))
		})
	}
}

func TestCacheBarrierContext(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := NewCache()
	ctx, cancel := context.WithCancel(context.Background())
	errc := waitAsync(c, ctx, "a", epoch)
	other := waitAsync(c, context.Background(), "a", epoch)
	requireBlocked(t, c, 2, errc)
	cancel()
	requireReleased(t, errc, context.Canceled)
	require.Equal(t, 1, c.waiting(), "only the cancelled waiter is gone")
	c.UpdateTime(epoch.Add(time.Nanosecond))
	requireReleased(t, other, nil)
}

func TestCacheGetNewerThan(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := NewCache()
	done := make(chan *PodStatus, 1)
	go func() {
		st, err := c.GetNewerThan(context.Background(), "a", epoch)
		if err == nil {
			done <- st
		}
		close(done)
	}()
	require.Eventually(t, func() bool { return c.waiting() == 1 }, 5*time.Second, time.Millisecond)
	want := &PodStatus{ID: "a", Name: "web"}
	c.Set("a", want, nil, epoch.Add(time.Millisecond))
	require.Same(t, want, <-done)

	// An unknown pod is answered by the global timestamp, with an empty
	// status.
	c.UpdateTime(epoch.Add(time.Second))
	st, err := c.GetNewerThan(context.Background(), "unknown", epoch)
	require.NoError(t, err)
	require.Equal(t, &PodStatus{ID: "unknown"}, st)
	require.Equal(t, epoch.Add(time.Second), c.Timestamp())
}
