package podworkers

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/kubetypes"
)

// recordingSyncer records every Syncer call as a short string and lets a
// test script each method.
type recordingSyncer struct {
	mu    sync.Mutex
	calls []string

	syncPod     func(ctx context.Context, t UpdateType, pod *v1.Pod) (bool, error)
	terminating func(ctx context.Context, pod *v1.Pod, grace int64, fn StatusFunc) error
	runtimePod  func(ctx context.Context, rp *RuntimePod) error
	terminated  func(ctx context.Context, pod *v1.Pod) error
}

var _ Syncer = (*recordingSyncer)(nil)

func (r *recordingSyncer) record(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
}

// take returns and clears the recorded calls.
func (r *recordingSyncer) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

func (r *recordingSyncer) SyncPod(ctx context.Context, t UpdateType, pod, _ *v1.Pod) (bool, error) {
	r.record("sync:%s:%s:%s", t, pod.UID, pod.ResourceVersion)
	if r.syncPod != nil {
		return r.syncPod(ctx, t, pod)
	}
	return false, nil
}

func (r *recordingSyncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, grace int64, fn StatusFunc) error {
	r.record("terminating:%s:%d", pod.UID, grace)
	if r.terminating != nil {
		return r.terminating(ctx, pod, grace, fn)
	}
	return nil
}

func (r *recordingSyncer) SyncTerminatingRuntimePod(ctx context.Context, rp *RuntimePod) error {
	r.record("runtime:%s", rp.UID)
	if r.runtimePod != nil {
		return r.runtimePod(ctx, rp)
	}
	return nil
}

func (r *recordingSyncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod) error {
	r.record("terminated:%s", pod.UID)
	if r.terminated != nil {
		return r.terminated(ctx, pod)
	}
	return nil
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newTestWorkers returns Workers on a fake clock with no jitter.
func newTestWorkers(t testing.TB, s Syncer, mutate ...func(*Config)) (*Workers, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	cfg := Config{Syncer: s, Clock: clk, ResyncJitter: -1, BackOffJitter: -1}
	for _, m := range mutate {
		m(&cfg)
	}
	w, err := New(cfg)
	require.NoError(t, err)
	return w, clk
}

// newPod returns a pod with a 30s grace period; rv distinguishes versions.
func newPod(uid, name, rv string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "ns", ResourceVersion: rv},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](30)},
	}
}

func staticPod(uid, name string) *v1.Pod {
	p := newPod(uid, name, "1")
	p.Annotations = map[string]string{kubetypes.ConfigSourceAnnotationKey: "file"}
	return p
}

func deleted(p *v1.Pod, grace int64) *v1.Pod {
	p = p.DeepCopy()
	p.DeletionTimestamp = &metav1.Time{Time: epoch}
	p.DeletionGracePeriodSeconds = &grace
	return p
}

func update(t UpdateType, p *v1.Pod) Update { return Update{Type: t, Pod: p} }

func kill(p *v1.Pod, grace *int64) Update {
	return Update{Type: UpdateKill, Pod: p, Kill: &KillOptions{GracePeriodOverride: grace}}
}

// apply sends updates and requires them to be accepted.
func apply(t testing.TB, w *Workers, updates ...Update) {
	t.Helper()
	for _, u := range updates {
		require.NoError(t, w.UpdatePod(context.Background(), u))
	}
}
