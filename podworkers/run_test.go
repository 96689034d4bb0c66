package podworkers

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// startRun runs w.Run in a goroutine and returns a stop func that cancels
// it and requires a nil result.
func startRun(t *testing.T, w *Workers) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return func() {
		cancel()
		require.NoError(t, <-done)
	}
}

func TestRunLifecycle(t *testing.T) {
	defer goleak.VerifyNone(t)
	synced := make(chan string, 10)
	r := &recordingSyncer{syncPod: func(_ context.Context, _ UpdateType, p *v1.Pod) (bool, error) {
		synced <- p.ResourceVersion
		return false, nil
	}}
	w, _ := newTestWorkers(t, r)
	idle := make(chan struct{}, 10)
	w.onIdle = func() { idle <- struct{}{} }
	p := newPod("a", "pa", "1")
	apply(t, w, update(UpdateCreate, p)) // before Run: kept until Run starts
	stop := startRun(t, w)
	require.Equal(t, "1", <-synced)
	<-idle // the worker goroutine is gone while the pod is idle

	apply(t, w, update(UpdateUpdate, newPod("a", "pa", "2")))
	require.Equal(t, "2", <-synced)
	<-idle

	done := make(chan struct{})
	apply(t, w, Update{Type: UpdateKill, Pod: p, Kill: &KillOptions{Completed: done}})
	<-done
	<-idle
	stop()
	st, _ := w.PodState("a")
	require.Equal(t, StateFinished, st)
	require.Equal(t, []string{"sync:create:a:1", "sync:update:a:2", "terminating:a:30", "terminated:a"}, r.take())
	require.ErrorIs(t, w.UpdatePod(context.Background(), Update{}), ErrInvalidUpdate)
}

func TestRunStopCancelsSyncsAndKeepsWork(t *testing.T) {
	defer goleak.VerifyNone(t)
	started := make(chan struct{})
	var block atomic.Bool
	block.Store(true)
	r := &recordingSyncer{}
	r.syncPod = func(ctx context.Context, _ UpdateType, _ *v1.Pod) (bool, error) {
		if block.Load() {
			close(started)
			<-ctx.Done()
			return false, fmt.Errorf("interrupted: %w", ctx.Err())
		}
		return false, nil
	}
	w, _ := newTestWorkers(t, r)
	stop := startRun(t, w)
	apply(t, w, update(UpdateCreate, newPod("a", "pa", "1")))
	<-started
	stop()
	require.Equal(t, []string{"sync:create:a:1"}, r.take())

	// The interrupted sync is replayed by the next worker.
	block.Store(false)
	require.Equal(t, 1, w.ProcessPending(context.Background()))
	require.Equal(t, []string{"sync:create:a:1"}, r.take())
}

func TestRunTwice(t *testing.T) {
	defer goleak.VerifyNone(t)
	w, _ := newTestWorkers(t, &recordingSyncer{})
	stop := startRun(t, w)
	// Run holds running from before it blocks; wait for that via an update.
	done := make(chan struct{})
	apply(t, w, Update{Type: UpdateKill, Pod: newPod("a", "pa", "1"), Kill: &KillOptions{Completed: done}})
	<-done
	require.ErrorIs(t, w.Run(context.Background()), ErrAlreadyRunning)
	stop()
	// A stopped Workers can run again.
	stop = startRun(t, w)
	stop()
}

func TestRunBoundedConcurrency(t *testing.T) {
	defer goleak.VerifyNone(t)
	var inFlight, peak atomic.Int32
	var wg sync.WaitGroup
	r := &recordingSyncer{syncPod: func(context.Context, UpdateType, *v1.Pod) (bool, error) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		inFlight.Add(-1)
		wg.Done()
		return false, nil
	}}
	w, _ := newTestWorkers(t, r, func(c *Config) { c.MaxConcurrentSyncs = 2 })
	const pods = 50
	wg.Add(pods)
	for i := range pods {
		apply(t, w, update(UpdateCreate, newPod(fmt.Sprint(i), fmt.Sprint("p", i), "1")))
	}
	stop := startRun(t, w)
	wg.Wait()
	stop()
	require.LessOrEqual(t, peak.Load(), int32(2))
	require.Len(t, r.take(), pods)
}

// Active counts work that does not wait for the clock: a sync in the status
// barrier is not active, a sync in the Syncer is.
func TestActive(t *testing.T) {
	defer goleak.VerifyNone(t)
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	s := &blockingBarrier{release: release, entered: entered}
	sy := newRecordingSyncerForActive()
	w, err := New(Config{Syncer: sy, StatusBarrier: s.wait, Clock: clocktesting.NewFakeClock(time.Unix(0, 0))})
	require.NoError(t, err)
	require.Zero(t, w.Active())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	require.NoError(t, w.UpdatePod(ctx, Update{Type: UpdateCreate, Pod: pod}))
	<-entered
	require.Zero(t, w.Active(), "a sync waiting for fresh status is not active")
	sy.block = make(chan struct{})
	close(release)
	<-sy.in
	require.Equal(t, 1, w.Active(), "a sync in the Syncer is")
	close(sy.block)
	require.Eventually(t, func() bool { return w.Active() == 0 }, 5*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}

type blockingBarrier struct {
	release chan struct{}
	entered chan struct{}
}

func (b *blockingBarrier) wait(ctx context.Context, _ types.UID, _ time.Time) error {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type activeSyncer struct {
	in    chan struct{}
	block chan struct{}
}

func newRecordingSyncerForActive() *activeSyncer { return &activeSyncer{in: make(chan struct{}, 1)} }

func (s *activeSyncer) SyncPod(ctx context.Context, _ UpdateType, _, _ *v1.Pod) (bool, error) {
	s.in <- struct{}{}
	select {
	case <-s.block:
	case <-ctx.Done():
	}
	return false, nil
}
func (s *activeSyncer) SyncTerminatingPod(context.Context, *v1.Pod, int64, StatusFunc) error {
	return nil
}
func (s *activeSyncer) SyncTerminatingRuntimePod(context.Context, *RuntimePod) error { return nil }
func (s *activeSyncer) SyncTerminatedPod(context.Context, *v1.Pod) error             { return nil }
