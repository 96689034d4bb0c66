package podworkers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// podTrack checks one pod's calls for overlaps and ordering.
type podTrack struct {
	inFlight    atomic.Int32
	calls       atomic.Int32
	mu          sync.Mutex
	terminating bool
	graces      []int64
	finished    int
	violations  []string
}

// checkingSyncer fails and panics now and then, and records violations of
// the workers' guarantees.
type checkingSyncer struct {
	pods map[types.UID]*podTrack
}

func (s *checkingSyncer) enter(uid types.UID) (*podTrack, int32) {
	tr := s.pods[uid]
	if tr.inFlight.Add(1) != 1 {
		tr.mu.Lock()
		tr.violations = append(tr.violations, "concurrent syncer calls")
		tr.mu.Unlock()
	}
	return tr, tr.calls.Add(1)
}

// fault fails about one call in five and panics about one in thirteen.
func fault(n int32) error {
	switch {
	case n%13 == 5:
		panic("injected")
	case n%5 == 3:
		return errors.New("injected")
	}
	return nil
}

func (s *checkingSyncer) SyncPod(ctx context.Context, _ UpdateType, pod, _ *v1.Pod) (bool, error) {
	tr, n := s.enter(pod.UID)
	defer tr.inFlight.Add(-1)
	tr.mu.Lock()
	if tr.terminating {
		tr.violations = append(tr.violations, "SyncPod after termination started")
	}
	tr.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return n%17 == 16, fault(n)
}

func (s *checkingSyncer) SyncTerminatingPod(_ context.Context, pod *v1.Pod, grace int64, _ StatusFunc) error {
	tr, n := s.enter(pod.UID)
	defer tr.inFlight.Add(-1)
	tr.mu.Lock()
	tr.terminating = true
	if l := len(tr.graces); l > 0 && grace > tr.graces[l-1] {
		tr.violations = append(tr.violations, fmt.Sprintf("grace period grew from %d to %d", tr.graces[l-1], grace))
	}
	tr.graces = append(tr.graces, grace)
	tr.mu.Unlock()
	return fault(n)
}

func (s *checkingSyncer) SyncTerminatingRuntimePod(context.Context, *RuntimePod) error {
	return errors.New("no runtime pods in this test")
}

func (s *checkingSyncer) SyncTerminatedPod(_ context.Context, pod *v1.Pod) error {
	tr, n := s.enter(pod.UID)
	defer tr.inFlight.Add(-1)
	if err := fault(n); err != nil {
		return err
	}
	tr.mu.Lock()
	tr.finished++
	tr.mu.Unlock()
	return nil
}

// TestThousandPodsRace sends random concurrent updates and kills for 1,000
// pods while Run works on them, stops Run mid-flight, then drives every pod
// to finished and checks each finished exactly once.
func TestThousandPodsRace(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 1000
	s := &checkingSyncer{pods: map[types.UID]*podTrack{}}
	pods := make([]*v1.Pod, n)
	uids := make([]types.UID, n)
	for i := range pods {
		pods[i] = newPod(fmt.Sprintf("uid-%d", i), fmt.Sprintf("pod-%d", i), "0")
		uids[i] = pods[i].UID
		s.pods[uids[i]] = &podTrack{}
	}
	w, clk := newTestWorkers(t, s, func(c *Config) { c.ResyncJitter, c.BackOffJitter = 0, 0 })
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	runDone := make(chan error, 1)
	go func() { runDone <- w.Run(ctx) }()

	// Creates first: a create after a kill would (rightly) restart the UID.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				require.NoError(t, w.UpdatePod(ctx, update(UpdateCreate, pods[i])))
			}
		})
	}
	wg.Wait()
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			for range 3000 {
				p := pods[rng.IntN(n)]
				var err error
				switch op := rng.IntN(10); op {
				case 0, 1:
					q := p.DeepCopy()
					q.ResourceVersion = fmt.Sprint(rng.IntN(100))
					err = w.UpdatePod(ctx, update(UpdateUpdate, q))
				case 2, 3:
					err = w.UpdatePod(ctx, update(UpdateSync, p))
				case 4:
					grace := int64(rng.IntN(40))
					err = w.UpdatePod(ctx, Update{Type: UpdateKill, Pod: p, Kill: &KillOptions{
						GracePeriodOverride: &grace, Force: rng.IntN(4) == 0, Evict: rng.IntN(2) == 0,
						Completed: make(chan struct{}),
					}})
				case 5:
					err = w.UpdatePod(ctx, update(UpdateUpdate, deleted(p, int64(rng.IntN(40)))))
				case 6:
					_ = w.Resync(p.UID)
				case 7:
					for _, uid := range w.DuePods() {
						_ = w.Resync(uid)
					}
				case 8:
					w.SyncKnownPods(ctx, sets.New(uids...))
				default:
					w.IsPodTerminationRequested(p.UID)
					w.ShouldPodContentBeRemoved(p.UID)
					w.CouldHaveRunningContainers(p.UID)
				}
				require.NoError(t, err)
			}
			for i := g; i < n; i += 8 {
				require.NoError(t, w.UpdatePod(ctx, kill(pods[i], ptr.To[int64](int64(rng.IntN(30))))))
			}
		})
	}
	wg.Wait()
	cancel() // stop with syncs in flight
	require.NoError(t, <-runDone)

	// Drive the rest to completion synchronously, retrying failures.
	for round := 0; ; round++ {
		require.Less(t, round, 200, "pods did not finish")
		clk.Step(DefaultBackOffPeriod)
		for _, uid := range w.DuePods() {
			require.NoError(t, w.Resync(uid))
		}
		w.ProcessPending(klog.NewContext(context.Background(), logr.Discard()))
		if allFinished(w, uids) {
			break
		}
	}
	for _, uid := range uids {
		tr := s.pods[uid]
		require.Empty(t, tr.violations, uid)
		require.Equal(t, 1, tr.finished, "pod %s finished %d times", uid, tr.finished)
	}
	require.Empty(t, w.SyncKnownPods(context.Background(), nil))
	require.Empty(t, w.pods)
	require.Zero(t, w.dueLen())
	require.Empty(t, w.runnable)
}

func allFinished(w *Workers, uids []types.UID) bool {
	for _, uid := range uids {
		if st, ok := w.PodState(uid); !ok || st != StateFinished {
			return false
		}
	}
	return true
}
