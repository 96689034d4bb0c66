package probertest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	utilexec "k8s.io/utils/exec"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/prober"
	"github.com/nodekit/nodekit/prober/probertest"
)

// epoch is where the tests' fake clocks start.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const containerID = "containerd://c1"

// harness is a Manager on a fake clock with the two fakes, driven by
// RunOnce: no Run goroutine, no sleeps.
type harness struct {
	clk    *clocktesting.FakeClock
	runner *probertest.Runner
	rec    *probertest.Recorder
	m      *prober.Manager
	ctx    context.Context
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{
		clk:    clocktesting.NewFakeClock(epoch),
		runner: &probertest.Runner{},
		rec:    &probertest.Recorder{},
		ctx:    context.Background(),
	}
	m, err := prober.New(prober.Config{
		Clock:  h.clk,
		Runner: h.runner,
		Sink:   h.rec.Sink,
		Rand:   func() float64 { return 0 }, // first runs at AddPod time
	})
	require.NoError(t, err)
	h.m = m
	return h
}

// addPod adds a pod whose container "app" has the liveness probe, and
// reports the container running as containerID.
func (h *harness) addPod(t *testing.T, liveness *v1.Probe) *v1.Pod {
	t.Helper()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", LivenessProbe: liveness}}},
	}
	require.NoError(t, h.m.AddPod(pod))
	h.m.UpdatePodStatus(h.ctx, pod, &v1.PodStatus{
		Phase: v1.PodRunning,
		PodIP: "10.88.0.2",
		ContainerStatuses: []v1.ContainerStatus{{
			Name:        "app",
			ContainerID: containerID,
			State:       v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(epoch)}},
		}},
	})
	return pod
}

func execProbe(cmd ...string) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: cmd}}}
}

// step advances the clock by d and runs what is due.
func (h *harness) step(d time.Duration) int {
	h.clk.Step(d)
	return h.m.RunOnce(h.ctx)
}

func (h *harness) liveness() string {
	r, ok := h.rec.Last(prober.Liveness, containerID)
	if !ok {
		return "none"
	}
	return r.String()
}

func TestLivenessFailsAfterFailureThreshold(t *testing.T) {
	h := newHarness(t)
	h.addPod(t, execProbe("cat", "/tmp/healthy")) // period 10s, failureThreshold 3
	require.Equal(t, 1, h.step(0))
	require.Equal(t, "Success", h.liveness())
	require.Equal(t, []probertest.Call{{ContainerID: "c1", Cmd: []string{"cat", "/tmp/healthy"}, Timeout: time.Second}},
		h.runner.Calls(), "the bare runtime ID; the default timeout")

	h.runner.SetExit("cat /tmp/healthy", 1)
	for i := range 2 {
		require.Equal(t, 1, h.step(10*time.Second))
		require.Equal(t, "Success", h.liveness(), "failure %d is below the threshold", i+1)
	}
	require.Equal(t, 1, h.step(10*time.Second))
	require.Equal(t, "Failure", h.liveness())
	id := containerid.ID{Type: "containerd", ID: "c1"}
	require.Equal(t, []probertest.TypedUpdate{
		{Type: prober.Liveness, Update: prober.Update{ContainerID: id, Result: prober.Success, PodUID: "uid-web"}},
		{Type: prober.Liveness, Update: prober.Update{ContainerID: id, Result: prober.Failure, PodUID: "uid-web"}},
	}, h.rec.Updates())
	res, ok := h.m.Result(prober.Liveness, id)
	require.True(t, ok)
	require.Equal(t, prober.Failure, res, "the recorder agrees with the manager")
}

func TestRunnerRepliesAsTheProberExpects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply probertest.Reply
		fn    probertest.ExecFunc
		want  string // liveness after one failing period, failureThreshold 1
	}{
		{name: "exit 0", reply: probertest.Reply{}, want: "Success"},
		{name: "exit 1", reply: probertest.Reply{ExitCode: 1, Stdout: []byte("unhealthy")}, want: "Failure"},
		{name: "runtime error publishes nothing", reply: probertest.Reply{Err: errors.New("runtime broken")}, want: "Success"},
		{name: "func with exit error", fn: func(context.Context, string, []string, time.Duration) ([]byte, []byte, error) {
			return nil, nil, utilexec.CodeExitError{Err: errors.New("exit 2"), Code: 2}
		}, want: "Failure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			p := execProbe("check")
			p.FailureThreshold = 1
			h.addPod(t, p)
			h.step(0)
			require.Equal(t, "Success", h.liveness())
			if tc.fn != nil {
				h.runner.SetFunc("check", tc.fn)
			} else {
				h.runner.Set("check", tc.reply)
			}
			require.Equal(t, 1, h.step(10*time.Second))
			require.Equal(t, tc.want, h.liveness())
		})
	}
}

func TestExecTimeout(t *testing.T) {
	h := newHarness(t)
	p := execProbe("sleep", "60")
	p.TimeoutSeconds, p.FailureThreshold = 2, 1
	h.addPod(t, p)
	h.runner.Block("sleep 60")

	ran := make(chan int, 1)
	go func() { ran <- h.m.RunOnce(h.ctx) }()
	// The command hangs; its timeout waits on the fake clock.
	require.Eventually(t, func() bool { return len(h.runner.Calls()) == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, "Success", h.liveness(), "the initial result, published before the run")
	select {
	case <-ran:
		t.Fatal("RunOnce returned before the timeout")
	default:
	}
	h.clk.Step(2 * time.Second)
	require.Equal(t, 1, <-ran)
	require.Equal(t, "Failure", h.liveness(), "a timeout is a failure, not an error")
}
