package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/nodekit/nodekit/crisim"
)

// TestReferenceAgentLifecycle drives the container lifecycle features
// through the API server with the CRI simulator: a sidecar that runs
// beside the app, an ephemeral container added to a running pod, a failing
// postStart hook, a termination message, and activeDeadlineSeconds.
func TestReferenceAgentLifecycle(t *testing.T) {
	ctx := context.Background()
	const node = "lifecycle-node"
	admin := srv.AdminClient()
	ensureDefaultServiceAccount(t, admin, "default")
	sim := crisim.New(crisim.Config{})
	sim.ScriptExec(crisim.Match{Pod: "hookfail", Container: "app"}, []string{"false"}, crisim.ExecResult{ExitCode: 1, Stdout: "hook says no"})
	sim.Script(crisim.Match{Pod: "message", Container: "app"}, crisim.Script{ExitAfter: time.Second, ExitCode: 2, Message: "boom"})
	stop := runAgent(t, node, sim, t.TempDir())
	defer stop()
	eventually := func(msg string, f func() bool) {
		t.Helper()
		require.Eventually(t, f, 45*time.Second, 100*time.Millisecond, msg)
	}
	always := v1.ContainerRestartPolicyAlways
	deadline := int64(2)
	exec := func(cmd ...string) *v1.LifecycleHandler {
		return &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: cmd}}
	}
	for _, p := range []*v1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "sidecar"}, Spec: v1.PodSpec{NodeName: node,
			InitContainers: []v1.Container{{Name: "side", Image: "busybox", RestartPolicy: &always,
				StartupProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1}}},
			Containers: []v1.Container{{Name: "app", Image: "busybox", Lifecycle: &v1.Lifecycle{PostStart: exec("true")}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "hookfail"}, Spec: v1.PodSpec{NodeName: node,
			Containers: []v1.Container{{Name: "app", Image: "busybox", Lifecycle: &v1.Lifecycle{PostStart: exec("false")}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "message"}, Spec: v1.PodSpec{NodeName: node, RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{Name: "app", Image: "busybox"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "deadline"}, Spec: v1.PodSpec{NodeName: node, ActiveDeadlineSeconds: &deadline,
			Containers: []v1.Container{{Name: "app", Image: "busybox"}}}},
	} {
		_, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	eventually("the app runs beside the started sidecar", func() bool {
		p := getPod(t, admin, "sidecar")
		if p == nil || p.Status.Phase != v1.PodRunning || len(p.Status.InitContainerStatuses) != 1 || len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		side, app := p.Status.InitContainerStatuses[0], p.Status.ContainerStatuses[0]
		return side.State.Running != nil && side.Started != nil && *side.Started && app.State.Running != nil && podReady(p)
	})

	// kubectl debug: an ephemeral container joins the running pod.
	p := getPod(t, admin, "sidecar")
	p.Spec.EphemeralContainers = []v1.EphemeralContainer{{TargetContainerName: "app",
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox", TerminationMessagePolicy: v1.TerminationMessageReadFile,
			ImagePullPolicy: v1.PullIfNotPresent}}}
	_, err := admin.CoreV1().Pods("default").UpdateEphemeralContainers(ctx, "sidecar", p, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually("the ephemeral container runs", func() bool {
		p := getPod(t, admin, "sidecar")
		return len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Running != nil
	})
	assert.Equal(t, int32(0), getPod(t, admin, "sidecar").Status.ContainerStatuses[0].RestartCount, "the app was left alone")

	eventually("a failed postStart hook kills the container, which restarts", func() bool {
		p := getPod(t, admin, "hookfail")
		return p != nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
	})
	evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "hookfail").String()})
	require.NoError(t, err)
	reasons := map[string]bool{}
	for _, e := range evs.Items {
		reasons[e.Reason] = true
	}
	assert.True(t, reasons["FailedPostStartHook"], "events: %v", reasons)

	eventually("the termination message is reported", func() bool {
		p := getPod(t, admin, "message")
		if p == nil || p.Status.Phase != v1.PodFailed || len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		term := p.Status.ContainerStatuses[0].State.Terminated
		return term != nil && term.ExitCode == 2 && term.Message == "boom"
	})

	eventually("the deadline fails the pod", func() bool {
		p := getPod(t, admin, "deadline")
		return p != nil && p.Status.Phase == v1.PodFailed && p.Status.Reason == "DeadlineExceeded"
	})
	eventually("its containers are stopped", func() bool {
		cs := getPod(t, admin, "deadline").Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Terminated != nil
	})

	grace := int64(0)
	for _, name := range []string{"sidecar", "hookfail", "message", "deadline"} {
		require.NoError(t, admin.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace}))
	}
	eventually("pods gone", func() bool {
		for _, name := range []string{"sidecar", "hookfail", "message", "deadline"} {
			if getPod(t, admin, name) != nil {
				return false
			}
		}
		return true
	})
}
