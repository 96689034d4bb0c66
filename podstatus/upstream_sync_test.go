package podstatus

// The upstream kubelet's status manager cases (pkg/kubelet/status,
// status_manager_test.go) on writing statuses, terminating pods and
// merging, re-expressed through the Manager's API, each named after its
// upstream test. Upstream's verifyActions (the client calls of a sync) is
// syncVerbs here.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/kubetypes"
)

// syncVerbs syncs the pod's status and returns the client's calls since
// the last time, their verbs with "/status" for the status subresource.
func syncVerbs(t *testing.T, m *Manager, c *fake.Clientset, uid types.UID) []string {
	t.Helper()
	_ = m.Sync(context.Background(), uid) // its error is in the calls
	var verbs []string
	for _, a := range c.Actions() {
		v := a.GetVerb()
		if a.GetSubresource() != "" {
			v += "/" + a.GetSubresource()
		}
		verbs = append(verbs, v)
	}
	c.ClearActions()
	return verbs
}

func clientManager(t *testing.T, objects ...runtime.Object) (*Manager, *fake.Clientset) {
	t.Helper()
	c := fake.NewClientset(objects...)
	return newManager(t, Config{Client: clientset.Wrap(c)}), c
}

func TestSyncPodIgnoresNotFound(t *testing.T) {
	m, c := clientManager(t)
	c.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(v1.Resource("pods"), "test-pod")
	})
	m.SetPodStatus(upstreamPod(), messageStatus("a"))
	require.Equal(t, []string{"get"}, syncVerbs(t, m, c, "12345678"))
}

func TestSyncPod(t *testing.T) {
	pod := upstreamPod()
	m, c := clientManager(t, pod)
	m.SetPodStatus(pod, messageStatus("a"))
	require.Equal(t, []string{"get", "patch/status"}, syncVerbs(t, m, c, "12345678"))
}

func TestSyncPodChecksMismatchedUID(t *testing.T) {
	pod := upstreamPod()
	pod.UID = "first"
	m, c := clientManager(t, pod)
	different := upstreamPod()
	different.UID = "second"
	m.SetPodStatus(different, messageStatus("a"))
	require.Equal(t, []string{"get"}, syncVerbs(t, m, c, "second"))
}

func TestSyncPodNoDeadlock(t *testing.T) {
	m, c := clientManager(t)
	pod := upstreamPod()
	var ret *v1.Pod
	var err error
	c.PrependReactor("*", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		require.Equal(t, pod.Name, a.(k8stesting.GetAction).GetName())
		if ret == nil {
			return true, nil, err
		}
		return true, ret.DeepCopy(), err
	})
	step := 0
	set := func() []string {
		step++
		m.SetPodStatus(pod, messageStatus(fmt.Sprint(step)))
		return syncVerbs(t, m, c, "12345678")
	}

	err = apierrors.NewNotFound(v1.Resource("pods"), pod.Name)
	require.Equal(t, []string{"get"}, set(), "pod not found")

	ret, err = upstreamPod(), nil
	ret.UID = "other_pod"
	require.Equal(t, []string{"get"}, set(), "pod was recreated")

	ret = upstreamPod()
	require.Equal(t, []string{"get", "patch/status"}, set(), "pod not deleted (success case)")

	pod.DeletionTimestamp = &metav1.Time{Time: tNano}
	require.Equal(t, []string{"get", "patch/status"}, set(), "pod is terminated, but still running")

	require.Equal(t, []string{"get", "patch/status"}, set(), "pod is terminated successfully")

	ret, err = nil, errors.New("intentional test error")
	require.Equal(t, []string{"get"}, set(), "error case")
	require.Equal(t, 1, m.Pending(), "kept for a retry")
}

func TestStaleUpdates(t *testing.T) {
	pod := upstreamPod()
	m, c := clientManager(t, pod)
	status := v1.PodStatus{Message: "initial status"}
	m.SetPodStatus(pod, status)
	status.Message = "first version bump"
	m.SetPodStatus(pod, status)
	status.Message = "second version bump"
	m.SetPodStatus(pod, status)
	require.Equal(t, []string{"get", "patch/status"}, syncVerbs(t, m, c, "12345678"), "one write of the latest status")
	require.Equal(t, "second version bump", getPodNamed(t, c, pod).Status.Message)
	c.ClearActions()
	require.Zero(t, m.Pending(), "nothing left to sync")

	m.SetPodStatus(pod, status)
	require.Zero(t, m.Pending(), "an unchanged status is no update")
	require.Equal(t, []string{"get"}, syncVerbs(t, m, c, "12345678"), "a sync of an unchanged status patches nothing")
}

func getPodNamed(t *testing.T, c *fake.Clientset, pod *v1.Pod) *v1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
	require.NoError(t, err)
	return p
}

// TestStaticPod: a static pod's status goes to its mirror once there is
// one. Unlike upstream, which knows the mirror from its pod manager, the
// Manager asks the API server: a get while there is none.
func TestStaticPod(t *testing.T) {
	static := upstreamPod()
	static.Annotations = map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource,
		kubetypes.ConfigHashAnnotationKey: "12345678"}
	m, c := clientManager(t)
	now := metav1.NewTime(tNano)
	status := messageStatus("a")
	status.StartTime = &now
	m.SetPodStatus(static, status)
	got := cachedStatus(t, m, static)
	require.Equal(t, "a", got.Message)
	requireTime(t, tNano.Truncate(time.Second), startTime(t, got))

	require.Equal(t, []string{"get"}, syncVerbs(t, m, c, "12345678"), "no mirror pod: nothing written")
	require.Equal(t, 1, m.Pending())

	mirror := upstreamPod()
	mirror.UID = "mirror-12345678"
	mirror.Annotations = map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.APIServerSource,
		kubetypes.ConfigMirrorAnnotationKey: "12345678"}
	require.NoError(t, c.Tracker().Add(mirror))
	require.Equal(t, []string{"get", "patch/status"}, syncVerbs(t, m, c, "12345678"), "the mirror pod is written")
	require.Zero(t, m.Pending(), "nothing changed: nothing to sync")

	// Another static pod's mirror under the name: not written.
	mirror.Annotations[kubetypes.ConfigMirrorAnnotationKey] = "another-hash"
	mirror.UID, mirror.Status = "new-mirror-pod", v1.PodStatus{}
	require.NoError(t, c.Tracker().Update(v1.SchemeGroupVersion.WithResource("pods"), mirror, mirror.Namespace))
	c.ClearActions()
	require.Equal(t, []string{"get"}, syncVerbs(t, m, c, "12345678"))
}

func TestReconcilePodStatus(t *testing.T) {
	pod := upstreamPod()
	m, c := clientManager(t, pod)
	m.SetPodStatus(pod, messageStatus("a"))
	require.Equal(t, []string{"get", "patch/status"}, syncVerbs(t, m, c, "12345678"))

	// The pod as the API server now has it: no reconciliation needed.
	pod.Status = cachedStatus(t, m, pod)
	m.SetPodStatus(pod, pod.Status)
	require.Zero(t, m.Pending())

	// Only its timestamps' precision differs: still nothing to do.
	at := metav1.NewTime(startTime(t, pod.Status).Add(123 * time.Millisecond))
	status := *pod.Status.DeepCopy()
	status.StartTime = &at
	m.SetPodStatus(pod, status)
	require.Zero(t, m.Pending())

	m.SetPodStatus(pod, messageStatus("b"))
	require.Equal(t, []string{"get", "patch/status"}, syncVerbs(t, m, c, "12345678"))
}

func TestDeletePodBeforeFinished(t *testing.T) {
	pod := upstreamPod()
	pod.DeletionTimestamp = &metav1.Time{Time: tNano}
	m, c := clientManager(t, pod)
	status := messageStatus("a")
	status.Phase = v1.PodFailed
	m.SetPodStatus(pod, status)
	require.Equal(t, []string{"get", "patch/status"}, syncVerbs(t, m, c, "12345678"), "not finished: no delete")
}

// TestDeletePodFinished: upstream deletes the pod once TerminatePod's
// status is written; here the host says the termination is finished with
// Finish, as it does after its SyncTerminatedPod.
func TestDeletePodFinished(t *testing.T) {
	pod := upstreamPod()
	pod.DeletionTimestamp = &metav1.Time{Time: tNano}
	m, c := clientManager(t, pod)
	m.TerminatePod(pod)
	m.Finish(pod)
	require.Equal(t, []string{"get", "patch/status", "delete"}, syncVerbs(t, m, c, "12345678"))
}

func TestDoNotDeleteMirrorPods(t *testing.T) {
	static := upstreamPod()
	static.Annotations = map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource,
		kubetypes.ConfigHashAnnotationKey: "12345678"}
	mirror := upstreamPod()
	mirror.UID = "mirror-12345678"
	mirror.Annotations = map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.APIServerSource,
		kubetypes.ConfigMirrorAnnotationKey: "12345678"}
	mirror.DeletionTimestamp = &metav1.Time{Time: tNano}
	m, c := clientManager(t, mirror)
	now := metav1.NewTime(tNano)
	status := messageStatus("a")
	status.StartTime = &now
	m.SetPodStatus(static, status)
	m.Finish(static)
	require.Equal(t, []string{"get", "patch/status"}, syncVerbs(t, m, c, "12345678"), "no delete")
}

// TestMergePodStatus: upstream's table for mergePodStatus, conditions
// compared by type, status and reason, the rest in full.
func TestMergePodStatus(t *testing.T) {
	base := func() v1.PodStatus {
		return v1.PodStatus{Phase: v1.PodRunning, Message: "Message", Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionTrue}, {Type: v1.PodScheduled, Status: v1.ConditionTrue}}}
	}
	with := func(s v1.PodStatus, phase v1.PodPhase, cs ...v1.PodCondition) v1.PodStatus {
		if phase != "" {
			s.Phase = phase
		}
		s.Conditions = append(s.Conditions, cs...)
		return s
	}
	same := func(s v1.PodStatus) v1.PodStatus { return s }
	dt := func(reason string) v1.PodCondition {
		return v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: reason}
	}
	cond := func(t v1.PodConditionType, s v1.ConditionStatus, reason string) v1.PodCondition {
		return v1.PodCondition{Type: t, Status: s, Reason: reason}
	}
	feature := v1.PodConditionType("example.com/feature")
	readyTrue, scheduled := cond(v1.PodReady, v1.ConditionTrue, ""), cond(v1.PodScheduled, v1.ConditionTrue, "")
	failedReady := []v1.PodCondition{cond(v1.PodReady, v1.ConditionFalse, "PodFailed"), cond(v1.ContainersReady, v1.ConditionFalse, "PodFailed"), scheduled}
	unready := func(s v1.PodStatus) v1.PodStatus { s.Conditions[0].Status = v1.ConditionFalse; return s }
	for _, tc := range []struct {
		name       string
		couldRun   bool
		old, new   func(v1.PodStatus) v1.PodStatus
		want       v1.PodStatus
		wantConds  []v1.PodCondition
		reason     string
		wantReason string
	}{
		{name: "no change", old: same, new: same, want: base(), wantConds: base().Conditions},
		{name: "add DisruptionTarget condition when transitioning into failed phase", old: same,
			new:  func(s v1.PodStatus) v1.PodStatus { return with(s, v1.PodFailed, dt("TerminationByKubelet")) },
			want: with(base(), v1.PodFailed), wantConds: append(failedReady, dt("TerminationByKubelet"))},
		{name: "don't add DisruptionTarget condition when transitioning into failed phase, but there might still be running containers",
			couldRun: true, old: same,
			new:  func(s v1.PodStatus) v1.PodStatus { return with(s, v1.PodFailed, dt("TerminationByKubelet")) },
			want: base(), wantConds: []v1.PodCondition{readyTrue, scheduled}},
		{name: "preserve DisruptionTarget condition",
			old: func(s v1.PodStatus) v1.PodStatus { return with(s, "", dt("TerminationByKubelet")) }, new: same,
			want: base(), wantConds: []v1.PodCondition{readyTrue, scheduled, dt("TerminationByKubelet")}},
		{name: "override DisruptionTarget condition",
			old:  func(s v1.PodStatus) v1.PodStatus { return with(s, "", dt("EvictedByEvictionAPI")) },
			new:  func(s v1.PodStatus) v1.PodStatus { return with(s, v1.PodFailed, dt("TerminationByKubelet")) },
			want: with(base(), v1.PodFailed), wantConds: append(failedReady, dt("TerminationByKubelet"))},
		{name: "don't override DisruptionTarget condition when remaining in running phase",
			old:  func(s v1.PodStatus) v1.PodStatus { return with(s, "", dt("EvictedByEvictionAPI")) },
			new:  func(s v1.PodStatus) v1.PodStatus { return with(s, "", dt("TerminationByKubelet")) },
			want: base(), wantConds: []v1.PodCondition{dt("EvictedByEvictionAPI"), readyTrue, scheduled}},
		{name: "don't override DisruptionTarget condition when transitioning to failed phase but there might still be running containers",
			couldRun: true,
			old:      func(s v1.PodStatus) v1.PodStatus { return with(s, "", dt("EvictedByEvictionAPI")) },
			new:      func(s v1.PodStatus) v1.PodStatus { return with(s, v1.PodFailed, dt("TerminationByKubelet")) },
			want:     base(), wantConds: []v1.PodCondition{dt("EvictedByEvictionAPI"), readyTrue, scheduled}},
		{name: "readiness changes", old: same, new: unready,
			want: base(), wantConds: []v1.PodCondition{cond(v1.PodReady, v1.ConditionFalse, ""), scheduled}},
		{name: "additional pod condition",
			old: func(s v1.PodStatus) v1.PodStatus { return with(s, "", cond(feature, v1.ConditionTrue, "")) }, new: same,
			want: base(), wantConds: []v1.PodCondition{readyTrue, scheduled, cond(feature, v1.ConditionTrue, "")}},
		{name: "additional pod condition and readiness changes",
			old: func(s v1.PodStatus) v1.PodStatus { return with(s, "", cond(feature, v1.ConditionTrue, "")) }, new: unready,
			want: base(), wantConds: []v1.PodCondition{cond(v1.PodReady, v1.ConditionFalse, ""), scheduled, cond(feature, v1.ConditionTrue, "")}},
		{name: "additional pod condition changes",
			old:  func(s v1.PodStatus) v1.PodStatus { return with(s, "", cond(feature, v1.ConditionTrue, "")) },
			new:  func(s v1.PodStatus) v1.PodStatus { return with(s, "", cond(feature, v1.ConditionFalse, "")) },
			want: base(), wantConds: []v1.PodCondition{readyTrue, scheduled, cond(feature, v1.ConditionTrue, "")}},
		{name: "phase is transitioning to failed and no containers running",
			old: func(s v1.PodStatus) v1.PodStatus {
				s.Reason, s.Message = "Unknown", "Message"
				return s
			},
			new: func(s v1.PodStatus) v1.PodStatus {
				s.Phase, s.Reason, s.Message = v1.PodFailed, "Evicted", "Was Evicted"
				return s
			},
			want: v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "Was Evicted"}, wantConds: failedReady},
		{name: "phase is transitioning to failed and containers running", couldRun: true,
			old: func(s v1.PodStatus) v1.PodStatus {
				s.Reason, s.Message = "Unknown", "Message"
				return s
			},
			new: func(s v1.PodStatus) v1.PodStatus {
				s.Phase, s.Reason, s.Message = v1.PodFailed, "Evicted", "Was Evicted"
				return s
			},
			want: v1.PodStatus{Phase: v1.PodRunning, Reason: "Unknown", Message: "Message"}, wantConds: []v1.PodCondition{readyTrue, scheduled}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := tc.old(base())
			got := Merge(&v1.Pod{Status: old}, old, tc.new(base()), tc.couldRun, metav1.NewTime(tNano))
			require.ElementsMatch(t, tc.wantConds, typeStatusReason(got.Conditions))
			got.Conditions, tc.want.Conditions = nil, nil
			require.Equal(t, tc.want, got)
		})
	}
}

func typeStatusReason(cs []v1.PodCondition) []v1.PodCondition {
	var out []v1.PodCondition
	for _, c := range cs {
		out = append(out, v1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason})
	}
	return out
}
