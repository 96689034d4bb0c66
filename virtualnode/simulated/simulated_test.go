package simulated

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	utilexec "k8s.io/utils/exec"

	"github.com/nodekit/nodekit/virtualnode"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var (
	_ virtualnode.Provider      = (*Provider)(nil)
	_ virtualnode.PodNotifier   = (*Provider)(nil)
	_ virtualnode.LogProvider   = (*Provider)(nil)
	_ virtualnode.ExecProvider  = (*Provider)(nil)
	_ virtualnode.StatsProvider = (*Provider)(nil)
)

func TestNewInvalidConfig(t *testing.T) {
	_, err := New(Config{ReadyDelay: -1})
	require.True(t, errors.Is(err, ErrInvalidConfig))
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
		{"pending", simPod{created: at(t0), readyAt: at(ready)}, t0.Add(time.Second), v1.PodPending, false, -1},
		{"running", simPod{created: at(t0), readyAt: at(ready)}, ready, v1.PodRunning, true, -1},
		{"exited ok", simPod{created: at(t0), readyAt: at(ready), exitAt: at(ready.Add(time.Second))}, ready.Add(time.Minute), v1.PodSucceeded, false, 0},
		{"exited failed", simPod{created: at(t0), readyAt: at(ready), exitAt: at(ready.Add(time.Second)), exitCode: 3}, ready.Add(time.Minute), v1.PodFailed, false, 3},
		{"stopped gracefully", simPod{created: at(t0), readyAt: at(ready), stopped: at(ready.Add(time.Second))}, ready.Add(time.Minute), v1.PodSucceeded, false, 0},
		{"killed at grace end", simPod{created: at(t0), readyAt: at(ready), stopped: at(ready.Add(time.Second)), killed: true}, ready.Add(time.Minute), v1.PodFailed, false, exitCodeKilled},
		{"stopped before running", simPod{created: at(t0), readyAt: at(ready), stopped: at(t0.Add(time.Second))}, ready.Add(time.Minute), v1.PodFailed, false, exitCodeKilled},
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
			require.False(t, virtualnode.StatusChanged(st, simStatus(testPod(v1.RestartPolicyAlways, nil), &tc.p, tc.now)))
		})
	}
}

func TestSimulatedLifecycle(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := clocktesting.NewFakeClock(t0)
	sim, err := New(Config{ReadyDelay: 2 * time.Second, Clock: clk})
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

	armed := func() (ready, exit bool) {
		sim.mu.Lock()
		defer sim.mu.Unlock()
		tm := sim.pods[pod.UID].timers
		return tm != nil && tm.ready != nil, tm != nil && tm.exit != nil
	}
	ready, exit := armed()
	require.True(t, ready && exit)

	clk.Step(2 * time.Second)
	require.Equal(t, "uid-1", <-notified)
	st, _ = sim.PodStatus(ctx, pod)
	require.Equal(t, v1.PodRunning, st.Phase)
	ready, exit = armed()
	require.True(t, !ready && exit, "a fired timer is not kept")

	clk.Step(5 * time.Second)
	require.Equal(t, "uid-1", <-notified)
	st, _ = sim.PodStatus(ctx, pod)
	require.Equal(t, v1.PodFailed, st.Phase)
	sim.mu.Lock()
	require.Nil(t, sim.pods[pod.UID].timers, "no timer left")
	sim.mu.Unlock()
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
			sim, err := New(Config{Clock: clk})
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
	sim, err := New(Config{Clock: clk, StopDelay: time.Hour})
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

func testPod(policy v1.RestartPolicy, ann map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1", Annotations: ann},
		Spec: v1.PodSpec{NodeName: "n", RestartPolicy: policy,
			Containers: []v1.Container{{Name: "c", Image: "img"}}},
	}
}

func TestSimulatedLogs(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := clocktesting.NewFakeClock(t0)
	sim, err := New(Config{ReadyDelay: 2 * time.Second, Clock: clk})
	require.NoError(t, err)
	defer sim.Close()
	ctx := context.Background()
	pod := testPod(v1.RestartPolicyNever, map[string]string{AnnotationLog: "a\nb\n", AnnotationExitAfter: "10s", AnnotationExitCode: "3"})
	logs := func(opts v1.PodLogOptions) (string, error) {
		var b strings.Builder
		err := sim.ContainerLogs(ctx, pod, "c", &opts, &b, &b)
		return b.String(), err
	}
	require.NoError(t, sim.CreatePod(ctx, pod))
	_, err = logs(v1.PodLogOptions{})
	require.EqualError(t, err, `container "c" in pod "p" is waiting to start: ContainerCreating`)

	clk.Step(2 * time.Second) // running since t0+2s
	out, err := logs(v1.PodLogOptions{})
	require.NoError(t, err)
	require.Equal(t, "started container c\na\nb\n", out)
	two, five := int64(2), int64(5)
	out, _ = logs(v1.PodLogOptions{TailLines: &two, Timestamps: true})
	require.Equal(t, "2026-01-01T00:00:02.000000000Z a\n2026-01-01T00:00:02.000000000Z b\n", out)
	out, _ = logs(v1.PodLogOptions{LimitBytes: &five})
	require.Equal(t, "start", out)
	err = sim.Exec(ctx, pod, "init", []string{"true"}, nil, nil, nil, false, nil)
	require.ErrorContains(t, err, "not found")

	// A follower gets the exit line when the container exits.
	followed := make(chan string, 1)
	go func() {
		out, _ := logs(v1.PodLogOptions{Follow: true, SinceTime: &metav1.Time{Time: t0.Add(5 * time.Second)}})
		followed <- out
	}()
	clk.Step(10 * time.Second)
	require.Equal(t, "container c exited with code 3\n", <-followed)

	// Forgotten (finished): the log is rebuilt from the status.
	st, err := sim.PodStatus(ctx, pod)
	require.NoError(t, err)
	sim.ForgetPod(pod.UID)
	pod.Status = *st
	out, err = logs(v1.PodLogOptions{})
	require.NoError(t, err)
	require.Equal(t, "started container c\na\nb\ncontainer c exited with code 3\n", out)
	err = sim.Exec(ctx, pod, "c", []string{"true"}, nil, nil, nil, false, nil)
	require.ErrorContains(t, err, "not running")
}

func TestSimulatedExec(t *testing.T) {
	sim, err := New(Config{Clock: clocktesting.NewFakeClock(t0)})
	require.NoError(t, err)
	defer sim.Close()
	ctx := context.Background()
	pod := testPod(v1.RestartPolicyAlways, nil)
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", ValueFrom: &v1.EnvVarSource{}}}
	require.NoError(t, sim.CreatePod(ctx, pod))
	run := func(stdin string, cmd ...string) (string, string, error) {
		var out, errb bytes.Buffer
		err := sim.Exec(ctx, pod, "c", cmd, strings.NewReader(stdin), nopCloser{&out}, nopCloser{&errb}, false, nil)
		return out.String(), errb.String(), err
	}
	out, _, err := run("", "/bin/echo", "a", "b")
	require.NoError(t, err)
	require.Equal(t, "a b\n", out)
	out, _, err = run("", "env")
	require.NoError(t, err)
	require.Equal(t, "HOSTNAME=p\nA=1\n", out)
	out, _, err = run("in", "cat")
	require.NoError(t, err)
	require.Equal(t, "in", out)
	_, _, err = run("", "true")
	require.NoError(t, err)
	_, _, err = run("", "false")
	require.Equal(t, utilexec.CodeExitError{Err: errors.New("exit status 1"), Code: 1}, err)
	_, errOut, err := run("", "ls")
	require.Equal(t, 127, err.(utilexec.ExitError).ExitStatus())
	require.Equal(t, "ls: command not found\n", errOut)
	require.EqualError(t, sim.PortForward(ctx, pod, 80, nil), "port forwarding is not supported by the simulated provider")
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func TestPodStatsUsageModel(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	sim, err := New(Config{ReadyDelay: 2 * time.Second, Clock: clk})
	require.NoError(t, err)
	defer sim.Close()
	ctx := context.Background()
	pod := testPod(v1.RestartPolicyAlways, nil)
	pod.Spec.Containers = []v1.Container{
		{Name: "a", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi")}}},
		{Name: "b"},
	}
	st, err := sim.PodStats(ctx, pod)
	require.NoError(t, err)
	require.Nil(t, st, "unknown pod")
	require.NoError(t, sim.CreatePod(ctx, pod))
	st, err = sim.PodStats(ctx, pod)
	require.NoError(t, err)
	require.Nil(t, st, "not running yet")

	clk.Step(12 * time.Second) // ready at 2s: 10s running
	st, err = sim.PodStats(ctx, pod)
	require.NoError(t, err)
	require.NotNil(t, st)
	require.Len(t, st.Containers, 2)
	a := st.Containers[0]
	require.Equal(t, uint64(250_000_000), *a.CPU.UsageNanoCores)
	require.Equal(t, uint64(2_500_000_000), *a.CPU.UsageCoreNanoSeconds, "0.25 core for 10s")
	require.Equal(t, uint64(64<<20), *a.Memory.WorkingSetBytes)
	require.Zero(t, *st.Containers[1].CPU.UsageNanoCores, "no requests: no usage")
	require.Equal(t, uint64(250_000_000), *st.CPU.UsageNanoCores)
	require.True(t, st.StartTime.Time.Equal(t0.Add(2*time.Second)))

	// The annotations override the requests, for every container.
	pod.Annotations = map[string]string{AnnotationUsageCPU: "1", AnnotationUsageMemory: "1Gi"}
	st, err = sim.PodStats(ctx, pod)
	require.NoError(t, err)
	require.Equal(t, uint64(2_000_000_000), *st.CPU.UsageNanoCores)
	require.Equal(t, uint64(2<<30), *st.Memory.WorkingSetBytes)
	pod.Annotations[AnnotationUsageCPU] = "lots"
	st, err = sim.PodStats(ctx, pod)
	require.NoError(t, err)
	require.Equal(t, uint64(250_000_000), *st.CPU.UsageNanoCores, "not a quantity: the requests")

	require.NoError(t, sim.DeletePod(ctx, pod, 0))
	st, err = sim.PodStats(ctx, pod)
	require.NoError(t, err)
	require.Nil(t, st, "stopped")
}
