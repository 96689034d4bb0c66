// Package compose_test shows the blocks composed on one fake clock: every
// Run loop of lease, nodestatus, pleg, prober, eviction and podworkers is
// driven by stepping a single FakeClock to the earliest time any of them
// waits for, without sleeps and without reaching into the packages.
package compose_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"
	testclock "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/lease"
	"github.com/nodekit/nodekit/nodestatus"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/podworkers"
	"github.com/nodekit/nodekit/prober"
)

// countingSyncer counts pod syncs and tells whether one is in progress.
type countingSyncer struct {
	syncs  atomic.Int32
	inSync atomic.Int32
}

func (s *countingSyncer) SyncPod(context.Context, podworkers.UpdateType, *v1.Pod, *v1.Pod) (bool, error) {
	s.inSync.Add(1)
	defer s.inSync.Add(-1)
	s.syncs.Add(1)
	return false, nil
}
func (s *countingSyncer) SyncTerminatingPod(context.Context, *v1.Pod, int64, podworkers.StatusFunc) error {
	return nil
}
func (s *countingSyncer) SyncTerminatingRuntimePod(context.Context, *podworkers.RuntimePod) error {
	return nil
}
func (s *countingSyncer) SyncTerminatedPod(context.Context, *v1.Pod) error { return nil }

// The recipe: start every Run; then repeatedly wait until each block says
// it waits (its Next… accessor is ok) and none waits for the present, and
// step the clock to the earliest time any of them waits for. A block's
// accessor, unlike "the clock has waiters", is not fooled by the request
// timeouts its own work puts on the clock.
func TestOneFakeClockDrivesEveryRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testclock.NewFakeClock(start)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const node = "n1"
	cs := fake.NewClientset()

	rt := critesting.NewFakeRuntimeService()
	uid := types.UID("pod-uid")
	labels := map[string]string{pleg.PodUIDLabel: string(uid)}
	rt.SetFakeSandboxes([]*critesting.FakePodSandbox{{PodSandboxStatus: runtimeapi.PodSandboxStatus{Id: "sb1",
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: string(uid)},
		State:    runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: start.UnixNano(), Labels: labels}}})
	rt.SetFakeContainers([]*critesting.FakeContainer{{SandboxID: "sb1", ContainerStatus: runtimeapi.ContainerStatus{Id: "c1",
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, State: runtimeapi.ContainerState_CONTAINER_RUNNING,
		CreatedAt: start.UnixNano(), StartedAt: start.UnixNano(), Labels: labels}}})

	leases, err := lease.New(lease.Config{Client: cs.CoordinationV1(), NodeName: node, Clock: clk, Rand: func() float64 { return 0 }})
	require.NoError(t, err)
	ready, err := nodestatus.ReadyCondition(nodestatus.ReadyConfig{})
	require.NoError(t, err)
	capacity := func(_ context.Context, _ time.Time, n *v1.Node) error {
		n.Status.Capacity = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"),
			v1.ResourcePods: resource.MustParse("110"), v1.ResourceEphemeralStorage: resource.MustParse("10Gi")}
		n.Status.Allocatable = n.Status.Capacity.DeepCopy()
		return nil
	}
	status, err := nodestatus.New(nodestatus.Config{Client: cs.CoreV1(), NodeName: node, Clock: clk,
		Setters: []nodestatus.Setter{capacity, ready}, ReportJitter: -1})
	require.NoError(t, err)
	gen, err := pleg.New(pleg.Config{Runtime: rt, Clock: clk})
	require.NoError(t, err)
	probes, err := prober.New(prober.Config{Runner: rt, Clock: clk, Rand: func() float64 { return 0 }})
	require.NoError(t, err)
	syncer := &countingSyncer{}
	workers, err := podworkers.New(podworkers.Config{Syncer: syncer, StatusBarrier: gen.Cache().WaitNewerThan, Clock: clk})
	require.NoError(t, err)

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: uid},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "app", LivenessProbe: &v1.Probe{
			ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 10}}}}}
	require.NoError(t, probes.AddPod(pod))
	probes.UpdatePodStatus(ctx, pod, &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: "fake://c1",
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(start)}}}}})

	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{leases.Run, status.Run, gen.Run, probes.Run, workers.Run} {
		wg.Go(func() { assert.NoError(t, run(ctx)) })
	}
	defer wg.Wait()
	defer cancel()
	// Drain what the blocks report, as a host's sync loop would.
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-gen.Events():
			case <-probes.Updates(prober.Liveness):
			}
		}
	})
	require.NoError(t, workers.UpdatePod(ctx, podworkers.Update{Type: podworkers.UpdateCreate, Pod: pod}))

	nexts := map[string]func() (time.Time, bool){
		"lease": leases.NextDue,
		"nodestatus": func() (time.Time, bool) {
			n := status.NextSync()
			return n, !n.IsZero()
		},
		"pleg":   gen.NextRelist,
		"prober": probes.NextProbe,
		"podworkers": func() (time.Time, bool) {
			return time.Time{}, syncer.inSync.Load() == 0
		},
	}
	// next waits until every block waits, none for the present, and
	// returns the earliest time one waits for.
	next := func() time.Time {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second) // a real-time safety net only
		for {
			var earliest time.Time
			waiting := true
			state := map[string]string{}
			for name, f := range nexts {
				at, ok := f()
				state[name] = fmt.Sprintf("ok=%v at=+%v", ok, at.Sub(start))
				if !ok || (!at.IsZero() && !at.After(clk.Now())) {
					waiting = false
				}
				if !at.IsZero() && (earliest.IsZero() || at.Before(earliest)) {
					earliest = at
				}
			}
			if waiting {
				return earliest
			}
			if time.Now().After(deadline) {
				t.Fatalf("at +%v not every block waits: %v", clk.Since(start), state)
			}
			runtime.Gosched()
		}
	}
	var steps []time.Duration
	for clk.Since(start) < time.Minute {
		at := next()
		steps = append(steps, at.Sub(clk.Now()))
		clk.Step(at.Sub(clk.Now()))
	}
	next()

	// One minute of a node: relists every second, a lease renewal and a
	// status sync every 10s, the probe every 10s from its first run.
	assert.Len(t, steps, 60, "one step per relist period: %v", steps)
	for _, d := range steps {
		assert.Equal(t, time.Second, d)
	}
	at := func(want time.Duration, got time.Time, what string) {
		t.Helper()
		assert.True(t, start.Add(want).Equal(got), "%s: want start+%v, got %v", what, want, got)
	}
	renewal, _ := leases.NextRenewal(node)
	at(70*time.Second, renewal, "lease renewed at 10s … 60s")
	at(70*time.Second, status.NextSync(), "node status")
	relist, _ := gen.NextRelist()
	at(61*time.Second, relist, "relist")
	probe, _ := probes.NextProbe()
	at(70*time.Second, probe, "probe")
	execs := 0
	for _, c := range rt.GetCalls() {
		if c == "ExecSync" {
			execs++
		}
	}
	assert.Equal(t, 7, execs, "probed at 0s, 10s … 60s")
	assert.GreaterOrEqual(t, syncer.syncs.Load(), int32(1), "the pod synced once the PLEG was fresh")
	l, err := cs.CoordinationV1().Leases("kube-node-lease").Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	at(60*time.Second, l.Spec.RenewTime.Time, "lease renew time")
}
