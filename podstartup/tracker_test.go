package podstartup_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/podstartup"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newTracker(t *testing.T) (*podstartup.Tracker, *clocktesting.FakePassiveClock, *prometheus.Registry) {
	clk := clocktesting.NewFakePassiveClock(t0)
	reg := prometheus.NewRegistry()
	tr, err := podstartup.New(podstartup.Config{Clock: clk, Registerer: reg})
	require.NoError(t, err)
	return tr, clk, reg
}

func pod(uid string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid), CreationTimestamp: metav1.NewTime(t0)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}, {Name: "b"}}}}
}

// withStatus: the containers run (started true) or wait; with a start time.
func withStatus(p *v1.Pod, started bool) *v1.Pod {
	p = p.DeepCopy()
	p.Status.StartTime = &metav1.Time{Time: t0}
	p.Status.Phase = v1.PodPending
	for _, c := range p.Spec.Containers {
		cs := v1.ContainerStatus{Name: c.Name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
		if started {
			cs.State = v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(time.Second))}}
			p.Status.Phase = v1.PodRunning
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs)
	}
	return p
}

func sum(t *testing.T, reg *prometheus.Registry, name string) (count uint64, total float64) {
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	return 0, 0
}

func TestSLIExcludesPullsAndInitContainers(t *testing.T) {
	tr, clk, reg := newTracker(t)
	p := pod("p1")
	p.Spec.InitContainers = []v1.Container{{Name: "init"}}
	clk.SetTime(t0.Add(time.Second))
	tr.ObservedOnWatch(p) // first seen: no start time yet
	require.Equal(t, 1, tr.Tracked())

	// Two image pulls overlapping: 2s..6s and 4s..8s count 6s.
	clk.SetTime(t0.Add(2 * time.Second))
	tr.ImagePullStarted(p.UID)
	clk.SetTime(t0.Add(4 * time.Second))
	tr.ImagePullStarted(p.UID)
	clk.SetTime(t0.Add(6 * time.Second))
	tr.ImagePullFinished(p.UID)
	clk.SetTime(t0.Add(8 * time.Second))
	tr.ImagePullFinished(p.UID)
	tr.ImagePullFinished(p.UID) // no open pull: nothing
	// Two init containers ran 2s and 1s.
	tr.InitContainerStarted(p.UID, t0.Add(8*time.Second))
	tr.InitContainerFinished(p.UID, t0.Add(10*time.Second))
	tr.InitContainerStarted(p.UID, t0.Add(10*time.Second+time.Millisecond))
	tr.InitContainerFinished(p.UID, t0.Add(10*time.Second)) // the first one's exit again: ignored
	tr.InitContainerFinished(p.UID, t0.Add(11*time.Second+time.Millisecond))
	tr.InitContainerFinished(p.UID, t0.Add(12*time.Second)) // no start: ignored

	clk.SetTime(t0.Add(12 * time.Second))
	tr.StatusWritten(withStatus(p, false))
	tr.ObservedOnWatch(withStatus(p, false))
	tr.ObservedOnWatch(withStatus(p, true)) // seen running before its status was written: not yet
	count, _ := sum(t, reg, "kubelet_pod_start_sli_duration_seconds")
	require.Zero(t, count)

	clk.SetTime(t0.Add(13 * time.Second))
	tr.StatusWritten(withStatus(p, true))
	clk.SetTime(t0.Add(14 * time.Second))
	tr.StatusWritten(withStatus(p, true)) // the first write counts
	tr.ObservedOnWatch(withStatus(p, true))
	count, s := sum(t, reg, "kubelet_pod_start_sli_duration_seconds")
	require.Equal(t, uint64(1), count)
	require.InDelta(t, 14-6-3, s, 1e-9, "observed at 14s, minus 6s of pulls and 3s of init")
	count, s = sum(t, reg, "kubelet_pod_start_total_duration_seconds")
	require.Equal(t, uint64(1), count)
	require.InDelta(t, 14, s, 1e-9)
	require.InDelta(t, 5, gauge(t, reg, "kubelet_first_network_pod_start_sli_duration_seconds"), 1e-9)
	require.Zero(t, tr.Tracked(), "recorded pods are dropped")

	tr.ObservedOnWatch(withStatus(p, true)) // once only
	count, _ = sum(t, reg, "kubelet_pod_start_sli_duration_seconds")
	require.Equal(t, uint64(1), count)
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func TestExclusions(t *testing.T) {
	tr, clk, reg := newTracker(t)

	// Seen with a start time (the agent restarted): never tracked.
	tr.ObservedOnWatch(withStatus(pod("old"), true))
	// Unschedulable when first seen, and later: never tracked.
	u := pod("unsched")
	u.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
	tr.ObservedOnWatch(u)
	u.Status.Conditions = nil
	tr.ObservedOnWatch(u)
	// Stateful: counted in the total only.
	st := pod("stateful")
	st.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/x"}}}}
	tr.ObservedOnWatch(st)
	// Finished before it started: dropped.
	done := pod("done")
	tr.ObservedOnWatch(done)
	done.Status.Phase = v1.PodFailed
	tr.ObservedOnWatch(done)

	clk.SetTime(t0.Add(3 * time.Second))
	for _, p := range []*v1.Pod{pod("old"), u, st} {
		tr.StatusWritten(withStatus(p, true))
		tr.ObservedOnWatch(withStatus(p, true))
	}
	count, _ := sum(t, reg, "kubelet_pod_start_sli_duration_seconds")
	require.Zero(t, count)
	count, _ = sum(t, reg, "kubelet_pod_start_total_duration_seconds")
	require.Equal(t, uint64(1), count, "the stateful pod")
	require.Equal(t, 1, tr.Tracked(), "the unschedulable pod stays excluded until forgotten")
	tr.Forget(u.UID)
	require.Zero(t, tr.Tracked())
}

func TestNewRegistersOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, err := podstartup.New(podstartup.Config{Registerer: reg})
	require.NoError(t, err)
	_, err = podstartup.New(podstartup.Config{Registerer: reg})
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "register metrics"), err)
	_, err = podstartup.New(podstartup.Config{})
	require.NoError(t, err, "no registerer: no metrics")
}
