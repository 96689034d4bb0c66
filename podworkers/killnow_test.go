package podworkers

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

func TestKillPodNowWaitsForTheContainersToStop(t *testing.T) {
	ctx := context.Background()
	var reason string
	s := &recordingSyncer{terminating: func(_ context.Context, _ *v1.Pod, _ int64, fn StatusFunc) error {
		st := &v1.PodStatus{}
		fn(st)
		reason = st.Reason
		return nil
	}}
	w, _ := newTestWorkers(t, s)
	pod := newPod("u1", "p", "1")
	require.NoError(t, w.UpdatePod(ctx, Update{Type: UpdateCreate, Pod: pod}))
	w.ProcessPending(ctx)
	s.take()

	done := make(chan error, 1)
	go func() {
		done <- w.KillPodNow(ctx, pod, 0, func(st *v1.PodStatus) { st.Reason = "Evicted" })
	}()
	for {
		select {
		case err := <-done:
			require.NoError(t, err)
			assert.Equal(t, []string{"terminating:u1:0", "terminated:u1"}, s.take(), "grace 0 forced, not raised to 1")
			assert.Equal(t, "Evicted", reason)
			assert.True(t, w.ShouldPodContentBeRemoved(pod.UID), "an eviction")
			return
		default:
			w.ProcessPending(ctx) // until the kill arrived and ran
		}
	}
}

func TestKillPodNowGivesUpWithItsContext(t *testing.T) {
	w, _ := newTestWorkers(t, &recordingSyncer{})
	pod := newPod("u1", "p", "1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, w.KillPodNow(ctx, pod, 30, nil), context.Canceled, "nobody processes the kill")
	require.Error(t, w.KillPodNow(context.Background(), &v1.Pod{}, 30, nil), "an invalid update is refused")
}
