package vnodes

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testPod(policy v1.RestartPolicy, ann map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1", Annotations: ann},
		Spec: v1.PodSpec{NodeName: "n", RestartPolicy: policy,
			Containers: []v1.Container{{Name: "c", Image: "img"}}},
	}
}

func TestSimStatus(t *testing.T) {
	ready := t0.Add(2 * time.Second)
	tests := []struct {
		name     string
		p        simPod
		now      time.Time
		phase    v1.PodPhase
		ready    bool
		exitCode int32 // -1: not terminated
	}{
		{"pending", simPod{created: t0, readyAt: ready}, t0.Add(time.Second), v1.PodPending, false, -1},
		{"running", simPod{created: t0, readyAt: ready}, ready, v1.PodRunning, true, -1},
		{"exited ok", simPod{created: t0, readyAt: ready, exitAt: ready.Add(time.Second)}, ready.Add(time.Minute), v1.PodSucceeded, false, 0},
		{"exited failed", simPod{created: t0, readyAt: ready, exitAt: ready.Add(time.Second), exitCode: 3}, ready.Add(time.Minute), v1.PodFailed, false, 3},
		{"stopped gracefully", simPod{created: t0, readyAt: ready, stopped: ready.Add(time.Second)}, ready.Add(time.Minute), v1.PodSucceeded, false, 0},
		{"killed at grace end", simPod{created: t0, readyAt: ready, stopped: ready.Add(time.Second), killed: true}, ready.Add(time.Minute), v1.PodFailed, false, exitCodeKilled},
		{"stopped before running", simPod{created: t0, readyAt: ready, stopped: t0.Add(time.Second)}, ready.Add(time.Minute), v1.PodFailed, false, exitCodeKilled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := simStatus(testPod(v1.RestartPolicyAlways, nil), &tc.p, tc.now)
			require.Equal(t, tc.phase, st.Phase)
			require.Len(t, st.ContainerStatuses, 1)
			cs := st.ContainerStatuses[0]
			require.Equal(t, tc.ready, cs.Ready)
			if tc.exitCode < 0 {
				require.Nil(t, cs.State.Terminated)
			} else {
				require.NotNil(t, cs.State.Terminated)
				require.Equal(t, tc.exitCode, cs.State.Terminated.ExitCode)
			}
			for _, c := range st.Conditions {
				if c.Type == v1.PodReady {
					require.Equal(t, tc.ready, c.Status == v1.ConditionTrue)
				}
			}
			// Stable: the same inputs give an equal status (no patch).
			require.False(t, StatusChanged(st, simStatus(testPod(v1.RestartPolicyAlways, nil), &tc.p, tc.now)))
		})
	}
}

func TestSimulatedLifecycle(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := clocktesting.NewFakeClock(t0)
	sim, err := NewSimulated(SimulatedConfig{ReadyDelay: 2 * time.Second, Clock: clk})
	require.NoError(t, err)
	defer sim.Close()
	notified := make(chan string, 4)
	sim.NotifyPods(func(uid types.UID) { notified <- string(uid) })
	ctx := context.Background()
	pod := testPod(v1.RestartPolicyNever, map[string]string{AnnotationExitAfter: "5s", AnnotationExitCode: "1"})
	require.NoError(t, sim.CreatePod(ctx, pod))
	require.NoError(t, sim.CreatePod(ctx, pod)) // idempotent
	st, err := sim.PodStatus(ctx, pod)
	require.NoError(t, err)
	require.Equal(t, v1.PodPending, st.Phase)

	clk.Step(2 * time.Second)
	require.Equal(t, "uid-1", <-notified)
	st, _ = sim.PodStatus(ctx, pod)
	require.Equal(t, v1.PodRunning, st.Phase)

	clk.Step(5 * time.Second)
	require.Equal(t, "uid-1", <-notified)
	st, _ = sim.PodStatus(ctx, pod)
	require.Equal(t, v1.PodFailed, st.Phase)
	require.NoError(t, sim.DeletePod(ctx, pod, 0)) // already exited: no wait
	sim.ForgetPod(pod.UID)
	require.Zero(t, sim.Len())
	st, err = sim.PodStatus(ctx, pod)
	require.NoError(t, err)
	require.Nil(t, st)
}

func TestSimulatedDeleteHonoursGrace(t *testing.T) {
	defer goleak.VerifyNone(t)
	tests := []struct {
		name     string
		stop     string
		grace    time.Duration
		wait     time.Duration
		exitCode int32
	}{
		{"stops within grace", "3s", 10 * time.Second, 3 * time.Second, 0},
		{"killed at grace end", "1h", 2 * time.Second, 2 * time.Second, exitCodeKilled},
		{"zero grace", "1h", 0, 0, exitCodeKilled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			sim, err := NewSimulated(SimulatedConfig{Clock: clk})
			require.NoError(t, err)
			defer sim.Close()
			ctx := context.Background()
			pod := testPod(v1.RestartPolicyAlways, map[string]string{AnnotationStopAfter: tc.stop})
			require.NoError(t, sim.CreatePod(ctx, pod))
			done := make(chan error, 1)
			go func() { done <- sim.DeletePod(ctx, pod, tc.grace) }()
			if tc.wait > 0 {
				require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
				clk.Step(tc.wait - time.Millisecond)
				select {
				case <-done:
					t.Fatal("stopped before its time")
				default:
				}
				clk.Step(time.Millisecond)
			}
			require.NoError(t, <-done)
			st, _ := sim.PodStatus(ctx, pod)
			require.Equal(t, tc.exitCode, st.ContainerStatuses[0].State.Terminated.ExitCode)
		})
	}
}

func TestSimulatedDeleteCancelled(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := clocktesting.NewFakeClock(t0)
	sim, err := NewSimulated(SimulatedConfig{Clock: clk, StopDelay: time.Hour})
	require.NoError(t, err)
	pod := testPod(v1.RestartPolicyAlways, nil)
	require.NoError(t, sim.CreatePod(context.Background(), pod))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.DeletePod(ctx, pod, 30*time.Second) }()
	require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

func TestPodStatusPatch(t *testing.T) {
	p := simPod{created: t0, readyAt: t0}
	pod := testPod(v1.RestartPolicyAlways, nil)
	old := simStatus(pod, &simPod{created: t0, readyAt: t0.Add(time.Hour)}, t0)
	st := simStatus(pod, &p, t0)
	require.True(t, StatusChanged(old, st))
	patch, err := PodStatusPatch(pod.UID, old, st)
	require.NoError(t, err)
	require.Contains(t, string(patch), `"uid":"uid-1"`)
	require.Contains(t, string(patch), `"phase":"Running"`)
	require.NotContains(t, string(patch), `"podIP"`, "unchanged fields are not sent")
}

func TestNewInvalidConfig(t *testing.T) {
	cs := fake.NewClientset()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no client", Config{Nodes: []string{"a"}}},
		{"no nodes", Config{Client: cs}},
		{"empty name", Config{Client: cs, Nodes: []string{""}}},
		{"duplicate", Config{Client: cs, Nodes: []string{"a", "a"}}},
		{"negative", Config{Client: cs, Nodes: []string{"a"}, CPU: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			require.ErrorIs(t, err, ErrInvalidConfig)
		})
	}
	_, err := New(Config{Client: cs, Nodes: []string{"a", "b"}})
	require.NoError(t, err)
	_, err = NewSimulated(SimulatedConfig{ReadyDelay: -1})
	require.True(t, errors.Is(err, ErrInvalidConfig))
}
