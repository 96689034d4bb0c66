package pleg

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/containerid"
)

func TestEmitterCoalescesPerPod(t *testing.T) {
	em := newEmitter(2, false, nil)
	em.emit(ev("a", ContainerStarted, "1"))
	em.emit(ev("b", ContainerStarted, "2"))
	em.emit(ev("c", ContainerStarted, "3")) // full: c is owed a PodSync
	em.emit(ev("c", ContainerDied, "3"))    // folds into c's debt
	em.emit(ev("d", ContainerStarted, "4"))
	em.emit(ev("c", ContainerChanged, "3")) // filtered, not counted
	require.Equal(t, uint64(3), em.count.Load())
	require.Equal(t, 2, em.pending())

	em.flush()
	require.Equal(t, ev("a", ContainerStarted, "1"), <-em.out)
	em.flush()
	require.Equal(t, ev("b", ContainerStarted, "2"), <-em.out)
	require.Equal(t, ev("c", PodSync, ""), <-em.out, "debts are paid oldest first")
	em.flush()
	require.Equal(t, ev("d", PodSync, ""), <-em.out)
	require.Zero(t, em.pending())

	em.emit(ev("c", ContainerStarted, "5"))
	require.Equal(t, ev("c", ContainerStarted, "5"), <-em.out, "a paid pod gets events again")
}

func TestEmitterDeliverPaysAsRoomFrees(t *testing.T) {
	defer goleak.VerifyNone(t)
	em := newEmitter(1, false, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		em.deliver(ctx)
		close(done)
	}()
	for i := range 5 {
		em.emit(ev(types.UID(fmt.Sprint(i)), ContainerStarted, "x"))
	}
	got := map[types.UID]bool{}
	for range 5 {
		select {
		case e := <-em.out:
			got[e.ID] = true
		case <-time.After(5 * time.Second):
			t.Fatal("debt not paid")
		}
	}
	require.Len(t, got, 5, "every pod is heard from")
	cancel()
	<-done

	// A debt in flight when ctx ends is kept for later.
	em.emit(ev("z", ContainerStarted, "x"))
	em.emit(ev("y", ContainerStarted, "x"))
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	em.deliver(ctx)
	require.Equal(t, 1, em.pending())
}

// TestRelistOverflowLosesNoPod: a slow consumer makes the generator fold
// events, and every pod is still heard from, with the fold counted.
func TestRelistOverflowLosesNoPod(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewPedanticRegistry()
	g := e.gen(t, Config{EventChannelCapacity: 3, Registerer: reg})
	sandboxes := map[types.UID]string{}
	for i := range 6 {
		name := fmt.Sprint("pod", i)
		sb := e.runPod(t, name)
		sandboxes[uidOf(name)] = sb
		e.startContainer(t, sb, name, "app")
	}
	res := relist(t, g)
	require.Equal(t, 12, res.Events)
	require.Equal(t, uint64(9), g.CoalescedEvents())
	require.InDelta(t, 9, metricValue(t, reg, "kubelet_pleg_discard_events"), 0)

	heard := map[types.UID]bool{}
	for len(heard) < 6 {
		for _, e := range drain(g) {
			heard[e.ID] = true
		}
		relist(t, g) // nothing changed; pays the debts that fit
	}
	require.Zero(t, g.em.pending())
	require.Empty(t, drain(g))

	// State is not lost either: the cache holds every pod.
	for uid, sb := range sandboxes {
		st, err := g.Cache().Get(uid)
		require.NoError(t, err)
		require.Equal(t, sb, st.SandboxStatuses[0].Id)
		require.Len(t, st.ContainerStatuses, 1)
	}
}

func TestSinkReceivesEventsInsteadOfChannel(t *testing.T) {
	e := newEnv(t)
	var got []PodLifecycleEvent
	g := e.gen(t, Config{RuntimeName: "sim", Sink: func(ev PodLifecycleEvent) { got = append(got, ev) }})
	sb := e.runPod(t, "web")
	app := e.startContainer(t, sb, "web", "app")
	_, err := g.Relist(context.Background())
	require.NoError(t, err)
	want := PodLifecycleEvent{ID: uidOf("web"), Type: ContainerStarted, ContainerID: containerid.ID{Type: "sim", ID: app}}
	require.Contains(t, got, want, "Relist alone delivers to the sink; no Run, no goroutine")
	require.Empty(t, g.Events(), "the channel stays empty with a sink")

	got = nil
	require.NoError(t, e.sim.ExitContainer(app, 1, ""))
	_, err = g.RelistPod(context.Background(), uidOf("web"))
	require.NoError(t, err)
	want.Type = ContainerDied
	require.Equal(t, []PodLifecycleEvent{want}, got)
}
