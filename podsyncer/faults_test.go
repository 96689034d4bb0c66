package podsyncer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit/nodekit/podstatus"
	"github.com/nodekit/nodekit/podsyncer"
)

// The sandbox dies after the plan chose it and before the container is
// created in it: the create fails (CreateContainerError), and the next
// sync does what upstream's plan does with a dead sandbox — a new one,
// and the container started in it; under Never too, since no container
// had run (upstream retries the sandbox while no container status exists).
func TestFaultSandboxDiesBetweenPlanAndAction(t *testing.T) {
	for _, policy := range []v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyNever} {
		t.Run(string(policy), func(t *testing.T) {
			var h *harness
			killed := false
			h = newHarness(t, func(cfg *podsyncer.Config, hh *harness) {
				cfg.BeforeCreate = func(pod *v1.Pod, _ *v1.Container) error {
					if !killed {
						killed = true
						sbs := hh.sandboxes(pod)
						require.NotEmpty(t, sbs)
						require.NoError(t, hh.rt.StopPodSandbox(hh.ctx, sbs[0].Id))
					}
					return nil
				}
			})
			pod := newPod("dies", ctr("app", appV1))
			pod.Spec.RestartPolicy = policy
			_, err := h.sync(pod)
			require.Error(t, err, "the container cannot be created in a stopped sandbox")
			cs := containerStatus(t, h.podStatus(pod), "app")
			require.NotNil(t, cs.State.Waiting)
			assert.Equal(t, "CreateContainerError", cs.State.Waiting.Reason)

			h.clk.Step(time.Second)
			assert.False(t, h.mustSync(pod))
			sbs := h.sandboxes(pod)
			require.Len(t, sbs, 2, "a new sandbox")
			assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_READY, sbs[1].State)
			assert.Equal(t, uint32(1), sbs[1].Metadata.Attempt)
			app := h.latest(pod, "app")
			require.NotNil(t, app)
			assert.Equal(t, running, app.State)
			st := h.podStatus(pod)
			assert.Equal(t, v1.PodRunning, st.Phase)
			assert.Zero(t, containerStatus(t, st, "app").RestartCount, "it never ran before")
		})
	}
}

// restartAgent replaces the harness's syncer and status manager with new
// ones, as an agent restart does: the runtime keeps its containers, the
// new agent knows only the pod as the API server last saw it.
func (h *harness) restartAgent() {
	h.t.Helper()
	var err error
	h.status, err = podstatus.New(podstatus.Config{Clock: h.clk})
	require.NoError(h.t, err)
	h.cfg.Status = h.status
	h.s, err = podsyncer.New(h.cfg)
	require.NoError(h.t, err)
}

// The agent restarts after a container exited and before its status was
// written: the API still says Running. The new agent reports what the
// runtime holds — the exit, and under Always the restart — as upstream's.
func TestFaultRestartBetweenExitAndStatusWrite(t *testing.T) {
	t.Run("Never", func(t *testing.T) {
		h := newHarness(t)
		pod := newPod("exits", ctr("app", appV1))
		pod.Spec.RestartPolicy = v1.RestartPolicyNever
		h.mustSync(pod)
		pod.Status = h.podStatus(pod) // what the API server got
		require.Equal(t, v1.PodRunning, pod.Status.Phase)
		h.exit(pod, "app", 3)
		h.restartAgent()

		assert.True(t, h.mustSync(pod), "the pod is done")
		st := h.podStatus(pod)
		assert.Equal(t, v1.PodFailed, st.Phase)
		term := containerStatus(t, st, "app").State.Terminated
		require.NotNil(t, term)
		assert.Equal(t, int32(3), term.ExitCode)
		assert.Equal(t, pod.Status.StartTime, st.StartTime, "the start time the API server has is kept")
	})
	t.Run("Always", func(t *testing.T) {
		h := newHarness(t)
		pod := newPod("exits", ctr("app", appV1))
		h.mustSync(pod)
		pod.Status = h.podStatus(pod)
		h.exit(pod, "app", 3)
		h.restartAgent()

		h.mustSync(pod)
		h.clk.Step(time.Second)
		h.mustSync(pod)
		cs := containerStatus(t, h.podStatus(pod), "app")
		assert.Equal(t, int32(1), cs.RestartCount)
		require.NotNil(t, cs.LastTerminationState.Terminated)
		assert.Equal(t, int32(3), cs.LastTerminationState.Terminated.ExitCode)
	})
	// The runtime lost the container too (removed while the agent was
	// away): the kubelet infers that the running container stopped —
	// ContainerStatusUnknown, exit 137, a restart counted — rather than
	// showing the pod Pending again; a pod being deleted is not counted.
	for _, deleting := range []bool{false, true} {
		name := map[bool]string{false: "Always/removed", true: "Always/removed while deleting"}[deleting]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			pod := newPod("lost", ctr("app", appV1))
			h.mustSync(pod)
			pod.Status = h.podStatus(pod)
			id := h.latest(pod, "app").Id
			h.exit(pod, "app", 3)
			require.NoError(t, h.rt.RemoveContainer(h.ctx, id))
			if deleting {
				now := metav1.NewTime(h.clk.Now())
				pod.DeletionTimestamp = &now
			}
			h.restartAgent()

			if deleting {
				require.NoError(t, h.terminate(pod, 30, nil))
			} else {
				h.mustSync(pod)
			}
			cs := containerStatus(t, h.podStatus(pod), "app")
			require.NotNil(t, cs.LastTerminationState.Terminated, "%+v", cs)
			assert.Equal(t, podstatus.ReasonContainerStatusUnknown, cs.LastTerminationState.Terminated.Reason)
			assert.Equal(t, int32(137), cs.LastTerminationState.Terminated.ExitCode)
			want := int32(1)
			if deleting {
				want = 0
			}
			assert.Equal(t, want, cs.RestartCount)
			assert.NotEqual(t, v1.PodPending, h.podStatus(pod).Phase)
		})
	}
}
