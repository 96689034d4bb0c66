package prober

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
)

const cid = "crisim://c1"

func TestThresholds(t *testing.T) {
	thr := func(success, failure int32) func(*v1.Probe) {
		return func(p *v1.Probe) { p.SuccessThreshold, p.FailureThreshold = success, failure }
	}
	cases := []struct {
		name  string
		typ   ProbeType
		probe *v1.Probe
		exits []int    // exit code of each run
		want  []string // cached result after each run
		calls int      // runner calls in the end
	}{
		{"liveness default: 3 failures, then hold", Liveness, execProbe("x"),
			[]int{0, 1, 1, 1, 1, 1}, []string{"Success", "Success", "Success", "Failure", "Failure", "Failure"}, 4},
		{"liveness failure run broken by a success", Liveness, execProbe("x", thr(1, 2)),
			[]int{1, 0, 1, 1}, []string{"Success", "Success", "Success", "Failure"}, 4},
		{"readiness starts as failure, success threshold 2", Readiness, execProbe("x", thr(2, 1)),
			[]int{0, 0, 1, 0, 0}, []string{"Failure", "Success", "Failure", "Failure", "Success"}, 5},
		{"readiness keeps probing after failure", Readiness, execProbe("x", thr(1, 1)),
			[]int{1, 1, 0}, []string{"Failure", "Failure", "Success"}, 3},
		{"startup success holds", Startup, execProbe("x"),
			[]int{0, 0, 0}, []string{"Success", "Success", "Success"}, 1},
		{"startup failure after threshold holds", Startup, execProbe("x", thr(1, 2)),
			[]int{1, 1, 0}, []string{"Unknown", "Failure", "Failure"}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			probes := map[ProbeType]*v1.Probe{tc.typ: tc.probe}
			pod := testPod("p", probes[Liveness], probes[Readiness], probes[Startup])
			require.NoError(t, e.m.AddPod(pod))
			st := runningStatus(cid, epoch)
			if tc.typ != Startup {
				st.ContainerStatuses[0].Started = ptr(true)
			}
			e.m.UpdatePodStatus(e.ctx, pod, st)
			for i, code := range tc.exits {
				e.runner.set("x", code)
				d := 10 * time.Second
				if i == 0 {
					d = 0
				}
				require.Equal(t, 1, e.step(d), "run %d", i)
				require.Equal(t, tc.want[i], e.result(tc.typ, cid), "after run %d", i)
			}
			require.Equal(t, tc.calls, e.runner.count("x"))
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestInitialDelay(t *testing.T) {
	e := newEnv(t)
	pod := testPod("p", execProbe("live", func(p *v1.Probe) { p.InitialDelaySeconds = 15 }), nil, nil)
	require.NoError(t, e.m.AddPod(pod))
	e.m.UpdatePodStatus(e.ctx, pod, runningStatus(cid, epoch))
	e.step(0)
	require.Zero(t, e.runner.count("live"), "at 0s")
	require.Equal(t, "Success", e.result(Liveness, cid), "initial value is published before the delay")
	e.step(10 * time.Second)
	require.Zero(t, e.runner.count("live"), "at 10s")
	e.step(10 * time.Second)
	require.Equal(t, 1, e.runner.count("live"), "at 20s")
}

func TestStartupGatesLivenessAndReadiness(t *testing.T) {
	e := newEnv(t)
	pod := testPod("p", execProbe("live"), execProbe("ready"), execProbe("start", func(p *v1.Probe) { p.FailureThreshold = 10 }))
	require.NoError(t, e.m.AddPod(pod))
	e.runner.set("start", 1)

	sync := func() *v1.ContainerStatus {
		st := runningStatus(cid, epoch)
		e.m.UpdatePodStatus(e.ctx, pod, st)
		return &st.ContainerStatuses[0]
	}
	c := sync()
	require.False(t, *c.Started)
	require.False(t, c.Ready)
	e.step(0)
	e.step(10 * time.Second)
	e.step(10 * time.Second)
	require.Equal(t, 3, e.runner.count("start"))
	require.Zero(t, e.runner.count("live")+e.runner.count("ready"), "gated by the startup probe")
	require.Equal(t, "L=Success R=Failure S=Unknown", e.results(cid))

	e.runner.set("start", 0)
	e.step(10 * time.Second)
	require.Equal(t, "S=Success", "S="+e.result(Startup, cid))
	c = sync() // the host learns the container started
	require.True(t, *c.Started)
	require.False(t, c.Ready, "readiness not yet probed")
	e.step(10 * time.Second) // readiness was triggered by sync; liveness due
	require.Equal(t, 4, e.runner.count("start"), "startup holds after success")
	require.Equal(t, 1, e.runner.count("live"))
	require.GreaterOrEqual(t, e.runner.count("ready"), 1)
	c = sync()
	require.True(t, c.Ready)
}

func TestHoldAfterLivenessFailureUntilNewContainer(t *testing.T) {
	e := newEnv(t)
	pod := testPod("p", execProbe("live", func(p *v1.Probe) { p.FailureThreshold = 1 }), nil, nil)
	require.NoError(t, e.m.AddPod(pod))
	e.m.UpdatePodStatus(e.ctx, pod, runningStatus(cid, epoch))
	e.runner.set("live", 1)
	e.step(0)
	require.Equal(t, "Failure", e.result(Liveness, cid))
	for range 5 {
		e.step(10 * time.Second)
	}
	require.Equal(t, 1, e.runner.count("live"), "on hold")

	// The container is restarted with a new ID: probing resumes.
	e.runner.set("live", 0)
	e.m.UpdatePodStatus(e.ctx, pod, runningStatus("crisim://c2", e.clock.Now()))
	e.step(10 * time.Second)
	require.Equal(t, 2, e.runner.count("live"))
	require.Equal(t, "Success", e.result(Liveness, "crisim://c2"))
	require.Equal(t, "none", e.result(Liveness, cid), "the old container's result is dropped")
}

func TestJitterBounds(t *testing.T) {
	for _, r := range []float64{0, 0.25, 0.999} {
		e := newEnv(t, func(c *Config) { c.Rand = func() float64 { return r } })
		pod := testPod("p", execProbe("live", func(p *v1.Probe) { p.PeriodSeconds = 20 }), nil, nil)
		require.NoError(t, e.m.AddPod(pod))
		e.m.UpdatePodStatus(e.ctx, pod, runningStatus(cid, epoch))
		first := time.Duration(r * float64(20*time.Second))
		if first > 0 {
			require.Zero(t, e.step(first-time.Nanosecond), "r=%v: early", r)
			require.Equal(t, 1, e.step(time.Nanosecond), "r=%v: on time", r)
		} else {
			require.Equal(t, 1, e.step(0))
		}
		require.Zero(t, e.step(20*time.Second-time.Nanosecond), "r=%v: period", r)
		require.Equal(t, 1, e.step(time.Nanosecond), "r=%v: next period", r)
	}

	// With the default randomness, a thousand probes spread over the period.
	e := newEnv(t, func(c *Config) { c.Rand = nil })
	for i := range 1000 {
		require.NoError(t, e.m.AddPod(testPod(string(rune('a'+i%26))+time.Duration(i).String(), execProbe("live"), nil, nil)))
	}
	var lo, hi time.Duration = time.Hour, 0
	e.m.mu.Lock()
	for _, w := range e.m.queue {
		d := w.next.Sub(epoch)
		lo, hi = min(lo, d), max(hi, d)
	}
	e.m.mu.Unlock()
	require.GreaterOrEqual(t, lo, time.Duration(0))
	require.Less(t, hi, 10*time.Second)
	require.Greater(t, hi-lo, 8*time.Second, "first runs are spread over the period")
}

func TestContainerStates(t *testing.T) {
	t.Run("not running: failure, stops when it will not restart", func(t *testing.T) {
		e := newEnv(t)
		pod := testPod("p", execProbe("live"), execProbe("ready"), nil)
		pod.Spec.RestartPolicy = v1.RestartPolicyNever
		require.NoError(t, e.m.AddPod(pod))
		st := runningStatus(cid, epoch)
		st.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}
		e.m.UpdatePodStatus(e.ctx, pod, st)
		e.step(0)
		require.Equal(t, "L=Failure R=Failure S=none", e.results(cid))
		require.Equal(t, 2, e.m.Probes(), "waiting: keep going")
		st.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}
		e.m.UpdatePodStatus(e.ctx, pod, st)
		e.step(10 * time.Second)
		require.Zero(t, e.m.Probes(), "terminated under restartPolicy Never: stop")
		require.Equal(t, "L=none R=none S=none", e.results(cid))
		require.Zero(t, e.runner.count("live")+e.runner.count("ready"))
	})
	t.Run("killed by a RestartAllContainers reset: keeps going", func(t *testing.T) {
		e := newEnv(t)
		pod := testPod("p", execProbe("live"), nil, nil)
		pod.Spec.RestartPolicy = v1.RestartPolicyNever
		never := v1.ContainerRestartPolicyNever
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "src", RestartPolicy: &never,
			RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}})
		require.NoError(t, e.m.AddPod(pod))
		st := runningStatus(cid, epoch)
		st.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137}}
		st.ContainerStatuses = append(st.ContainerStatuses, v1.ContainerStatus{Name: "src", ContainerID: "crisim://s1",
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 42}}})
		e.m.UpdatePodStatus(e.ctx, pod, st)
		e.step(0)
		require.Equal(t, 1, e.m.Probes(), "the pod starts over: its containers run again")
		st.ContainerStatuses[1].State.Terminated.ExitCode = 1
		e.m.UpdatePodStatus(e.ctx, pod, st)
		e.step(10 * time.Second)
		require.Zero(t, e.m.Probes(), "no reset: restartPolicy Never stops it")
	})
	t.Run("pod finished", func(t *testing.T) {
		e := newEnv(t)
		pod := testPod("p", execProbe("live"), nil, nil)
		require.NoError(t, e.m.AddPod(pod))
		st := runningStatus(cid, epoch)
		st.Phase = v1.PodSucceeded
		e.m.UpdatePodStatus(e.ctx, pod, st)
		e.step(0)
		require.Zero(t, e.m.Probes())
	})
	t.Run("pod deleting: liveness succeeds and stops, readiness goes on", func(t *testing.T) {
		e := newEnv(t)
		pod := testPod("p", execProbe("live"), execProbe("ready"), nil)
		require.NoError(t, e.m.AddPod(pod))
		e.runner.set("live", 1)
		deleting := pod.DeepCopy()
		now := e.clock.Now()
		deleting.DeletionTimestamp = ptr(metav1.NewTime(now))
		e.m.UpdatePodStatus(e.ctx, deleting, runningStatus(cid, epoch))
		e.step(0)
		require.Equal(t, 1, e.m.Probes())
		require.Zero(t, e.runner.count("live"))
		require.Equal(t, 1, e.runner.count("ready"))
	})
	t.Run("no status yet, then no container status", func(t *testing.T) {
		e := newEnv(t)
		pod := testPod("p", execProbe("live"), nil, nil)
		require.NoError(t, e.m.AddPod(pod))
		require.Equal(t, 1, e.step(0))
		e.m.UpdatePodStatus(e.ctx, pod, &v1.PodStatus{Phase: v1.PodPending})
		require.Equal(t, 1, e.step(10*time.Second))
		require.Zero(t, e.runner.count("live"))
		require.Equal(t, 1, e.m.Probes())
	})
}

func TestRemoveAndCleanup(t *testing.T) {
	e := newEnv(t)
	a := testPod("a", execProbe("live"), execProbe("ready"), execProbe("start"))
	b := testPod("b", execProbe("live"), nil, nil)
	require.NoError(t, e.m.AddPod(a))
	require.NoError(t, e.m.AddPod(b))
	require.NoError(t, e.m.AddPod(a), "adding again is a no-op")
	require.Equal(t, 4, e.m.Probes())
	e.m.UpdatePodStatus(e.ctx, b, runningStatus("crisim://b", epoch))
	e.step(0)
	require.Equal(t, "Success", e.result(Liveness, "crisim://b"))

	e.m.StopLivenessAndStartup(a)
	require.Equal(t, 2, e.m.Probes())
	e.m.RemovePod(a)
	require.Equal(t, 1, e.m.Probes())
	e.m.CleanupPods(map[types.UID]sets.Empty{"a": {}})
	require.Zero(t, e.m.Probes())
	require.Equal(t, "none", e.result(Liveness, "crisim://b"))
	require.Zero(t, e.step(time.Hour))
}

func TestInvalidProbesReportErrors(t *testing.T) {
	rec := record.NewFakeRecorder(100)
	e := newEnv(t, func(c *Config) { c.Recorder = rec })
	bad := &v1.Probe{} // no handler
	pod := testPod("p", bad, execProbe("ready"), nil)
	err := e.m.AddPod(pod)
	require.ErrorIs(t, err, ErrInvalidProbe)
	require.ErrorContains(t, err, "missing probe handler")
	require.Equal(t, 2, e.m.Probes(), "the valid probe runs, the invalid one reports")
	e.m.UpdatePodStatus(e.ctx, pod, runningStatus(cid, epoch))
	e.step(0)
	require.Equal(t, "Warning Unhealthy Liveness probe errored and resulted in unknown state: "+err.Error(), <-rec.Events)
	require.Equal(t, "L=Success R=Success S=none", e.results(cid), "the errored result is discarded")
	require.Equal(t, 1, e.runner.count("ready"))
}

func TestFailureAndWarningEvents(t *testing.T) {
	rec := record.NewFakeRecorder(100)
	e := newEnv(t, func(c *Config) { c.Recorder = rec })
	pod := testPod("p", execProbe("live"), nil, nil)
	require.NoError(t, e.m.AddPod(pod))
	e.m.UpdatePodStatus(e.ctx, pod, runningStatus(cid, epoch))
	e.runner.set("live", 2)
	e.step(0)
	require.Equal(t, "Warning Unhealthy Liveness probe failed: live failed", <-rec.Events)
}
