package allocation

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/kubetypes"
)

func pods(ps ...*v1.Pod) func() []*v1.Pod { return func() []*v1.Pod { return ps } }

func pod(uid string, gen int64, cpu string) *v1.Pod {
	r := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Generation: gen},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: r, Limits: r}}}}}
}

// fitCPU admits while the summed CPU requests stay within capacity milli-CPU.
func fitCPU(capacity int64) func(context.Context, *v1.Pod, []*v1.Pod) kubetypes.AdmitResult {
	return func(_ context.Context, p *v1.Pod, others []*v1.Pod) kubetypes.AdmitResult {
		used := int64(0)
		for _, o := range others {
			used += o.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
		}
		if used+p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() > capacity {
			return kubetypes.AdmitResult{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu"}
		}
		return kubetypes.AdmitResult{Admit: true}
	}
}

func TestResize(t *testing.T) {
	ctx := context.Background()
	m, err := New(Config{Admit: fitCPU(1000), Allocatable: func() v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")}
	}})
	require.NoError(t, err)
	a, b := pod("a", 1, "500m"), pod("b", 1, "300m")
	assert.Same(t, a, m.Allocated(a), "first sight: the spec is the allocation")
	assert.Same(t, b, m.Allocated(b))

	started, _ := m.Resize(ctx, a, pods(a, b))
	assert.False(t, started, "nothing changed")

	// Grow a to 600m: fits beside b's 300m.
	a2 := pod("a", 2, "600m")
	started, _ = m.Resize(ctx, a2, pods(a2, b))
	assert.True(t, started)
	assert.Same(t, a2, m.Allocated(a2))
	assert.Equal(t, []v1.PodCondition{{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, ObservedGeneration: 2}}, m.Conditions("a"))
	assert.False(t, m.Actuation("a", errors.New("boom")))
	assert.Equal(t, ReasonError, m.Conditions("a")[0].Reason)
	assert.True(t, m.Actuation("a", nil), "the resize completes")
	assert.Empty(t, m.Conditions("a"))

	// b asks for 500m: 600m + 500m does not fit now — deferred, b keeps 300m.
	b2 := pod("b", 2, "500m")
	started, first := m.Resize(ctx, b2, pods(a2, b2))
	assert.False(t, started)
	assert.True(t, first)
	_, first = m.Resize(ctx, b2, pods(a2, b2))
	assert.False(t, first, "the same pending resize is reported once")
	got := m.Allocated(b2)
	assert.Equal(t, "300m", got.Spec.Containers[0].Resources.Requests.Cpu().String())
	assert.Equal(t, "500m", b2.Spec.Containers[0].Resources.Requests.Cpu().String(), "the caller's pod is not modified")
	conds := m.Conditions("b")
	require.Len(t, conds, 1)
	assert.Equal(t, v1.PodResizePending, conds[0].Type)
	assert.Equal(t, ReasonDeferred, conds[0].Reason)
	assert.Equal(t, int64(2), conds[0].ObservedGeneration)

	// More than the node has: infeasible.
	b3 := pod("b", 3, "2")
	m.Resize(ctx, b3, pods(a2, b3))
	conds = m.Conditions("b")
	require.Len(t, conds, 1)
	assert.Equal(t, ReasonInfeasible, conds[0].Reason)
	assert.Equal(t, "Node didn't have enough capacity: cpu, requested: 2000, capacity: 1000", conds[0].Message)

	// a shrinks; now b's 500m fits.
	a3 := pod("a", 3, "400m")
	started, _ = m.Resize(ctx, a3, pods(a3, b2))
	assert.True(t, started)
	started, _ = m.Resize(ctx, b2, pods(a3, b2))
	assert.True(t, started)
	assert.Len(t, m.Conditions("b"), 1, "in progress only")

	m.SetActuated("b", "id1", b2.Spec.Containers[0].Resources)
	r, ok := m.Actuated("b", "id1")
	assert.True(t, ok)
	assert.Equal(t, "500m", r.Requests.Cpu().String())
	m.Forget("b")
	_, ok = m.Actuated("b", "id1")
	assert.False(t, ok)
}

func TestResizePodLevel(t *testing.T) {
	ctx := context.Background()
	m, err := New(Config{Admit: func(context.Context, *v1.Pod, []*v1.Pod) kubetypes.AdmitResult {
		return kubetypes.AdmitResult{Admit: true}
	}})
	require.NoError(t, err)
	plr := func(gen int64, cpu string) *v1.Pod {
		p := pod("a", gen, "100m")
		r := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
		p.Spec.Resources = &v1.ResourceRequirements{Requests: r, Limits: r}
		return p
	}
	a := plr(1, "200m")
	assert.Same(t, a, m.Allocated(a))
	_, known := m.PodActuated("a")
	assert.False(t, known)
	m.SetPodActuated("a", a.Spec.Resources)

	a2 := plr(2, "400m")
	assert.Equal(t, "200m", m.Allocated(a2).Spec.Resources.Limits.Cpu().String(), "a pod-level change is a resize")
	started, _ := m.Resize(ctx, a2, pods(a2))
	assert.True(t, started)
	assert.Same(t, a2, m.Allocated(a2))
	act, known := m.PodActuated("a")
	assert.True(t, known)
	assert.Equal(t, "200m", act.Limits.Cpu().String(), "the cgroup keeps the old values until actuated")

	// An equivalent quantity, or an empty list for none, is no change.
	a3 := plr(3, "0.4")
	a3.Spec.Resources.Claims = nil
	started, _ = m.Resize(ctx, a3, pods(a3))
	assert.False(t, started)
}

// Freed resources go to the pending resize that ranks first (higher
// priority, then Guaranteed, then the one pending longer), not to the pod
// that syncs first.
func TestResizePendingOrder(t *testing.T) {
	ctx := context.Background()
	m, err := New(Config{Admit: fitCPU(1000)})
	require.NoError(t, err)
	big := pod("big", 1, "600m")
	low, high, guar := pod("low", 1, "100m"), pod("high", 1, "100m"), pod("guar", 1, "100m")
	high.Spec.Priority = ptr.To[int32](1000)
	guar.Status.QOSClass = v1.PodQOSGuaranteed
	for _, p := range []*v1.Pod{big, low, high, guar} {
		m.Allocated(p)
	}
	grow := func(p *v1.Pod) *v1.Pod {
		q := pod(string(p.UID), 2, "500m")
		q.Spec.Priority, q.Status.QOSClass = p.Spec.Priority, p.Status.QOSClass
		return q
	}
	low2, high2, guar2 := grow(low), grow(high), grow(guar)
	all := pods(big, low2, high2, guar2)
	for _, p := range []*v1.Pod{low2, guar2, high2} { // pending in this order
		started, _ := m.Resize(ctx, p, all)
		require.False(t, started)
	}

	// big is gone: 300m in use. low syncs first, but high ranks first
	// and takes the room (800m); low stays deferred.
	rest := pods(low2, high2, guar2)
	started, _ := m.Resize(ctx, low2, rest)
	assert.False(t, started)
	assert.Equal(t, "500m", m.Allocated(high2).Spec.Containers[0].Resources.Requests.Cpu().String(), "allocated for high")
	require.Len(t, m.Conditions("high"), 1)
	assert.Equal(t, v1.PodResizeInProgress, m.Conditions("high")[0].Type)
	assert.Equal(t, "100m", m.Allocated(guar2).Spec.Containers[0].Resources.Requests.Cpu().String())

	// high shrinks back; at low's next sync the Guaranteed pod goes
	// before low, although low pended first.
	high3 := pod("high", 3, "100m")
	high3.Spec.Priority = high2.Spec.Priority
	rest = pods(low2, high3, guar2)
	started, _ = m.Resize(ctx, high3, rest)
	assert.True(t, started)
	started, _ = m.Resize(ctx, low2, rest)
	assert.False(t, started)
	assert.Equal(t, "500m", m.Allocated(guar2).Spec.Containers[0].Resources.Requests.Cpu().String(), "the Guaranteed pod first")
	assert.Equal(t, "100m", m.Allocated(low2).Spec.Containers[0].Resources.Requests.Cpu().String())
}

func TestSummary(t *testing.T) {
	p := pod("a", 4, "100m")
	p.Spec.InitContainers = []v1.Container{{Name: "init"}}
	assert.Equal(t, `{"initContainers":[{"name":"init","resources":{}}],"containers":[{"name":"c","resources":{"limits":{"cpu":"100m"},"requests":{"cpu":"100m"}}}],"generation":4}`, Summary(p))
}

func TestNewNeedsAdmit(t *testing.T) {
	_, err := New(Config{})
	assert.Error(t, err)
}

func TestRankShrinkFirst(t *testing.T) {
	m, err := New(Config{Admit: fitCPU(1000)})
	require.NoError(t, err)
	a, b := pod("a", 1, "500m"), pod("b", 1, "100m")
	m.Allocated(a)
	m.Allocated(b)
	shrink, grow := pod("a", 2, "400m"), pod("b", 2, "200m")
	grow.Spec.Priority = ptr.To[int32](1000)
	m.mu.Lock()
	defer m.mu.Unlock()
	assert.Negative(t, m.rankLocked(shrink, grow), "a resize that does not increase requests goes before a higher priority")
	assert.Positive(t, m.rankLocked(grow, shrink))
}
