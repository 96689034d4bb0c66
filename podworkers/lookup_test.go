package podworkers

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

// podSource is a host's pod store for Config.LookupPod.
type podSource struct {
	mu    sync.Mutex
	pods  map[types.UID]*v1.Pod
	calls int
}

func (s *podSource) lookup(uid types.UID) *v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return s.pods[uid]
}

func (s *podSource) set(p *v1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p == nil {
		s.pods = map[types.UID]*v1.Pod{}
		return
	}
	s.pods[p.UID] = p
}

func (s *podSource) lookups() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// kept returns the pod the worker of uid keeps and whether it dropped one.
func kept(w *Workers, uid types.UID) (*v1.Pod, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.pods[uid]
	return st.activePod(), st.released
}

// newLookupWorkers returns workers whose LookupPod reads an empty pod
// source, with their recording syncer.
func newLookupWorkers(t *testing.T) (*recordingSyncer, *podSource, *Workers) {
	r := &recordingSyncer{}
	src := &podSource{pods: map[types.UID]*v1.Pod{}}
	w, _ := newTestWorkers(t, r, func(c *Config) { c.LookupPod = src.lookup })
	return r, src, w
}

func TestLookupPodDropsIdlePods(t *testing.T) {
	r, src, w := newLookupWorkers(t)
	ctx := context.Background()
	version := func(rv string) *v1.Pod {
		p := newPod("p", "web", rv)
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](7)
		return p
	}
	p := version("1")
	src.set(p)
	apply(t, w, update(UpdateCreate, p))
	w.ProcessPending(ctx)
	require.Equal(t, []string{"sync:create:p:1"}, r.take())
	pod, dropped := kept(w, "p")
	require.Nil(t, pod, "an idle running pod is not kept")
	require.True(t, dropped)
	require.Zero(t, src.lookups(), "a pod handed with the update needs no lookup")

	// A resync without a pod asks the host for the latest one.
	src.set(version("2"))
	require.NoError(t, w.Resync("p"))
	w.ProcessPending(ctx)
	require.Equal(t, []string{"sync:sync:p:2"}, r.take())
	require.Equal(t, 1, src.lookups())
	pod, dropped = kept(w, "p")
	require.Nil(t, pod)
	require.True(t, dropped, "dropped again after the sync")

	// An update with its pod: no lookup.
	apply(t, w, update(UpdateUpdate, version("3")))
	w.ProcessPending(ctx)
	require.Equal(t, []string{"sync:update:p:3"}, r.take())
	require.Equal(t, 1, src.lookups())

	// Gone from the host: a resync does not sync a pod without its spec.
	src.set(nil)
	require.NoError(t, w.Resync("p"))
	w.ProcessPending(ctx)
	require.Empty(t, r.take())

	// Gone from the desired set too: the orphan terminates with the grace
	// period of its last pod, as a pod of its name.
	var terminated *v1.Pod
	r.terminated = func(_ context.Context, pod *v1.Pod) error { terminated = pod; return nil }
	known := w.SyncKnownPods(ctx, sets.New[types.UID]())
	require.Equal(t, WorkerSync{State: StateTerminating, Orphan: true, HasConfig: true}, known["p"])
	w.ProcessPending(ctx)
	require.Equal(t, []string{"terminating:p:7", "terminated:p"}, r.take())
	require.Equal(t, "web", terminated.Name)
	require.Equal(t, "ns", terminated.Namespace)
}

func TestLookupPodRuntimeKillOfDroppedPod(t *testing.T) {
	r, src, w := newLookupWorkers(t)
	ctx := context.Background()
	p := newPod("p", "web", "1")
	src.set(p)
	apply(t, w, update(UpdateCreate, p))
	w.ProcessPending(ctx)
	r.take()
	// A kill naming only the runtime pod acts on the pod the host has, not
	// on the runtime pod (as it would for a kept pod).
	apply(t, w, Update{Type: UpdateKill, RunningPod: &RuntimePod{UID: "p", Name: "web", Namespace: "ns"},
		Kill: &KillOptions{GracePeriodOverride: ptr.To[int64](5)}})
	w.ProcessPending(ctx)
	require.Equal(t, []string{"terminating:p:5", "terminated:p"}, r.take())
}

func TestWithoutLookupPodPodsAreKept(t *testing.T) {
	r := &recordingSyncer{}
	w, _ := newTestWorkers(t, r)
	ctx := context.Background()
	p := newPod("p", "web", "1")
	apply(t, w, update(UpdateCreate, p))
	w.ProcessPending(ctx)
	pod, dropped := kept(w, "p")
	require.Same(t, p, pod)
	require.False(t, dropped)
}

func TestLookupPodKeepsPodsItCannotDrop(t *testing.T) {
	r, src, w := newLookupWorkers(t)
	ctx := context.Background()
	long := newPod("long", "web", "1")
	long.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1 << 40) // kept as it is: no 32-bit copy
	unset := newPod("unset", "api", "1")
	unset.Spec.TerminationGracePeriodSeconds = nil // the default applies
	for _, p := range []*v1.Pod{long, unset} {
		src.set(p)
		apply(t, w, update(UpdateCreate, p))
	}
	w.ProcessPending(ctx)
	r.take()
	pod, dropped := kept(w, "long")
	require.Same(t, long, pod)
	require.False(t, dropped)
	_, dropped = kept(w, "unset")
	require.True(t, dropped)

	// Terminated from what was kept of them: the long grace period intact,
	// none for the pod that had none (the default, 30 s).
	src.set(nil)
	w.SyncKnownPods(ctx, sets.New[types.UID]())
	w.ProcessPending(ctx)
	require.ElementsMatch(t, []string{"terminating:long:1099511627776", "terminated:long",
		"terminating:unset:30", "terminated:unset"}, r.take())
}
