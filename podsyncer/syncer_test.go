package podsyncer_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/allocation"
	"github.com/nodekit/nodekit/cgroups"
	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/kubetypes"
	"github.com/nodekit/nodekit/pleg"
	"github.com/nodekit/nodekit/podstatus"
	"github.com/nodekit/nodekit/podstatus/podstatustest"
	"github.com/nodekit/nodekit/podsyncer"
	"github.com/nodekit/nodekit/podsyncer/podnet"
	"github.com/nodekit/nodekit/podworkers"
	"github.com/nodekit/nodekit/volumes"
	"github.com/nodekit/nodekit/volumes/volumestest"
)

// The blocks the host wires in implement the syncer's interfaces.
var (
	_ podsyncer.StatusManager = (*podstatus.Manager)(nil)
	_ podsyncer.StatusManager = (*podstatustest.Manager)(nil)
	_ podsyncer.Volumes       = (*volumes.Manager)(nil)
	_ podsyncer.Volumes       = (*volumestest.Volumes)(nil)
	_ podsyncer.Cgroups       = (*cgroups.Manager)(nil)
	_ podsyncer.Allocation    = (*allocation.Manager)(nil)
	_ podsyncer.States        = (*pleg.Generator)(nil)
)

const (
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
	created = runtimeapi.ContainerState_CONTAINER_CREATED
)

// The first sync of a plain pod creates its sandbox and starts its
// container; the status reports it running and ready; a later sync of the
// unchanged pod changes nothing.
func TestSyncPodRunsPlainPod(t *testing.T) {
	h := newHarness(t)
	pod := newPod("web", ctr("app", appV1))
	pod.Generation = 3
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "GREETING", Value: "hello"}}
	pod.Spec.Containers[0].Command = []string{"serve", "$(GREETING)"}

	assert.False(t, h.mustSync(pod), "a running pod is not done")

	sbs := h.sandboxes(pod)
	require.Len(t, sbs, 1)
	assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_READY, sbs[0].State)
	app := h.latest(pod, "app")
	assert.Equal(t, running, app.State)
	assert.Equal(t, appV1, app.Image.Image)
	assert.Equal(t, uint32(0), app.Metadata.Attempt)
	assert.Equal(t, filepath.Join(podsyncer.PodLogDir(h.logsDir, pod), "app", "0.log"), app.LogPath)
	assert.FileExists(t, app.LogPath, "the runtime writes the log where the sandbox's log directory says")
	assert.Equal(t, map[string]string{"io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "default",
		"io.kubernetes.pod.uid": "uid-web", "io.kubernetes.container.name": "app"}, app.Labels)
	assert.NotEmpty(t, app.Annotations["io.kubernetes.container.hash"])

	cfg := h.calls.containerConfig("app")
	require.NotNil(t, cfg)
	assert.Equal(t, []string{"serve", "hello"}, cfg.Command, "command expanded with the environment")
	assert.Equal(t, "hello", envOf(cfg)["GREETING"])
	assert.Equal(t, []string{"/proc/kcore"}, cfg.Linux.SecurityContext.MaskedPaths, "Config.MaskedPaths")

	// The managed /etc/hosts names the pod at its sandbox's address.
	sbStatus, err := h.rt.PodSandboxStatus(h.ctx, sbs[0].Id, false)
	require.NoError(t, err)
	ip := sbStatus.Status.Network.Ip
	require.NotEmpty(t, ip)
	hosts := filepath.Join(h.vols.PodDir(pod.UID), "etc-hosts")
	assert.Contains(t, mountsOf(app), "/etc/hosts="+hosts)
	b, err := os.ReadFile(hosts)
	require.NoError(t, err)
	assert.Contains(t, string(b), ip+"\tweb\n")

	st := h.podStatus(pod)
	assert.Equal(t, v1.PodRunning, st.Phase)
	assert.Equal(t, ip, st.PodIP)
	assert.Equal(t, []v1.PodIP{{IP: ip}}, st.PodIPs)
	assert.Equal(t, v1.PodQOSBestEffort, st.QOSClass)
	require.NotNil(t, st.StartTime)
	assert.True(t, st.StartTime.Time.Equal(epoch))
	assert.Equal(t, int64(3), st.ObservedGeneration)
	cs := containerStatus(t, st, "app")
	assert.Equal(t, "crisim://"+app.Id, cs.ContainerID)
	assert.Equal(t, app.ImageRef, cs.ImageID)
	assert.Equal(t, appV1, cs.Image)
	require.NotNil(t, cs.State.Running)
	assert.True(t, cs.State.Running.StartedAt.Time.Equal(epoch))
	assert.True(t, cs.Ready)
	assert.Equal(t, ptr.To(true), cs.Started)
	assert.Equal(t, int32(0), cs.RestartCount)
	for _, typ := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady, v1.PodScheduled} {
		c := podCondition(t, st, typ)
		assert.Equal(t, v1.ConditionTrue, c.Status, typ)
		assert.Equal(t, int64(3), c.ObservedGeneration, typ)
	}
	assert.Equal(t, []string{"Pulled", "Created", "Started"}, reasons(h.takeEvents()))

	// A periodic sync of the unchanged pod: volumes refreshed, nothing else.
	h.clk.Step(time.Minute)
	assert.False(t, h.mustSync(pod))
	assert.Len(t, h.instances(pod, "app"), 1)
	assert.Len(t, h.sandboxes(pod), 1)
	assert.Equal(t, 1, h.sim.Calls("CreateContainer"))
	assert.Empty(t, h.takeEvents())
	setUp, _ := h.vols.calls()
	assert.Equal(t, []types.UID{pod.UID, pod.UID}, setUp, "volumes are set up on every sync")
	again := h.podStatus(pod)
	assert.Equal(t, st.StartTime, again.StartTime, "the start time stays")
	assert.Equal(t, podCondition(t, st, v1.PodReady).LastTransitionTime, podCondition(t, again, v1.PodReady).LastTransitionTime,
		"an unchanged condition keeps its transition time")
}

// envOf is a container config's environment.
func envOf(cfg *runtimeapi.ContainerConfig) map[string]string {
	out := map[string]string{}
	for _, kv := range cfg.Envs {
		out[kv.Key] = string(kv.Value)
	}
	return out
}

// mountsOf lists a container's mounts as "container path=host path".
func mountsOf(st *runtimeapi.ContainerStatus) []string {
	var out []string
	for _, m := range st.Mounts {
		out = append(out, m.ContainerPath+"="+m.HostPath)
	}
	return out
}

// Init containers run one at a time, in order; app containers start once
// all succeeded, and init containers never run again in that sandbox.
type initLog []string

func (l *initLog) InitContainerStarted(_ types.UID, at time.Time) {
	*l = append(*l, "start "+at.Sub(epoch).String())
}
func (l *initLog) InitContainerFinished(_ types.UID, at time.Time) {
	*l = append(*l, "finish "+at.Sub(epoch).String())
}

func TestSyncPodRunsInitContainersInOrder(t *testing.T) {
	var inits initLog
	h := newHarness(t, func(cfg *podsyncer.Config, _ *harness) { cfg.InitContainers = &inits })
	pod := newPod("init", ctr("app", appV1))
	pod.Spec.InitContainers = []v1.Container{ctr("init1", initImg), ctr("init2", initImg)}

	h.mustSync(pod)
	assert.Equal(t, running, h.latest(pod, "init1").State)
	assert.Empty(t, h.instances(pod, "init2"))
	assert.Empty(t, h.instances(pod, "app"))
	st := h.podStatus(pod)
	assert.Equal(t, v1.PodPending, st.Phase)
	initialized := podCondition(t, st, v1.PodInitialized)
	assert.Equal(t, v1.ConditionFalse, initialized.Status)
	assert.Equal(t, "ContainersNotInitialized", initialized.Reason)
	assert.Equal(t, "containers with incomplete status: [init1 init2]", initialized.Message)
	assert.Equal(t, "PodInitializing", waitingReason(t, st, "app"))
	assert.Equal(t, "PodInitializing", waitingReason(t, st, "init2"))
	assert.NotNil(t, containerStatus(t, st, "init1").State.Running)
	assert.Equal(t, v1.ConditionTrue, podCondition(t, st, v1.PodReadyToStartContainers).Status)

	h.mustSync(pod) // init1 still runs: wait for it
	assert.Empty(t, h.instances(pod, "init2"))

	h.clk.Step(2 * time.Second)
	h.exit(pod, "init1", 0)
	h.mustSync(pod)
	assert.Equal(t, running, h.latest(pod, "init2").State)
	assert.Empty(t, h.instances(pod, "app"))
	st = h.podStatus(pod)
	term := containerStatus(t, st, "init1").State.Terminated
	require.NotNil(t, term)
	assert.Equal(t, "Completed", term.Reason)
	assert.Equal(t, "containers with incomplete status: [init2]", podCondition(t, st, v1.PodInitialized).Message)

	h.clk.Step(3 * time.Second)
	h.exit(pod, "init2", 0)
	h.mustSync(pod)
	assert.Equal(t, running, h.latest(pod, "app").State)
	st = h.podStatus(pod)
	assert.Equal(t, v1.PodRunning, st.Phase)
	assert.Equal(t, v1.ConditionTrue, podCondition(t, st, v1.PodInitialized).Status)
	assert.Equal(t, v1.ConditionTrue, podCondition(t, st, v1.PodReady).Status)

	h.mustSync(pod)
	assert.Len(t, h.instances(pod, "init1"), 1, "an init container is not run again")
	assert.Len(t, h.instances(pod, "init2"), 1)
	// Each start once; each exit on every sync that sees it.
	assert.Equal(t, initLog{"start 0s", "finish 2s", "start 2s", "finish 2s", "finish 5s", "finish 2s", "finish 5s"}, inits)
}

// A failed init container fails a pod that never restarts, and is
// restarted (with the crash back-off) in a pod that restarts on failure.
func TestSyncPodInitContainerFailure(t *testing.T) {
	t.Run("Never", func(t *testing.T) {
		h := newHarness(t)
		pod := newPod("initfail", ctr("app", appV1))
		pod.Spec.RestartPolicy = v1.RestartPolicyNever
		pod.Spec.InitContainers = []v1.Container{ctr("init", initImg)}
		h.mustSync(pod)
		h.exit(pod, "init", 3)

		done, err := h.sync(pod)
		require.NoError(t, err)
		assert.True(t, done)
		assert.Len(t, h.instances(pod, "init"), 1, "not restarted")
		assert.Empty(t, h.instances(pod, "app"))
		st := h.podStatus(pod)
		assert.Equal(t, v1.PodFailed, st.Phase)
		term := containerStatus(t, st, "init").State.Terminated
		require.NotNil(t, term)
		assert.Equal(t, int32(3), term.ExitCode)
		assert.Equal(t, "Error", term.Reason)
		assert.Equal(t, v1.ConditionFalse, podCondition(t, st, v1.PodInitialized).Status)
	})
	t.Run("OnFailure", func(t *testing.T) {
		h := newHarness(t)
		pod := newPod("initretry", ctr("app", appV1))
		pod.Spec.RestartPolicy = v1.RestartPolicyOnFailure
		pod.Spec.InitContainers = []v1.Container{ctr("init", initImg)}
		h.mustSync(pod)
		h.exit(pod, "init", 1)
		h.mustSync(pod) // the first restart is immediate
		assert.Equal(t, uint32(1), h.latest(pod, "init").Metadata.Attempt)
		assert.Equal(t, running, h.latest(pod, "init").State)

		h.exit(pod, "init", 1)
		done, err := h.sync(pod)
		assert.False(t, done)
		require.ErrorContains(t, err, "CrashLoopBackOff")
		assert.Len(t, h.instances(pod, "init"), 2)
		st := h.podStatus(pod)
		assert.Equal(t, v1.PodPending, st.Phase)
		cs := containerStatus(t, st, "init")
		assert.Equal(t, "CrashLoopBackOff", waitingReason(t, st, "init"))
		require.NotNil(t, cs.LastTerminationState.Terminated)
		assert.Equal(t, int32(1), cs.LastTerminationState.Terminated.ExitCode)
		assert.Equal(t, int32(1), cs.RestartCount)
		assert.True(t, hasEvent(h.takeEvents(), "BackOff", "Back-off restarting failed container init"))

		h.clk.Step(10 * time.Second)
		h.mustSync(pod)
		assert.Equal(t, uint32(2), h.latest(pod, "init").Metadata.Attempt)
		assert.Equal(t, int32(2), containerStatus(t, h.podStatus(pod), "init").RestartCount)
		h.exit(pod, "init", 0)
		h.mustSync(pod)
		assert.Equal(t, running, h.latest(pod, "app").State)
		assert.Equal(t, v1.PodRunning, h.podStatus(pod).Phase)
	})
}

// App containers wait until every sidecar has started (its startup probe
// passed); a sidecar that exits is restarted without touching the app.
func TestSyncPodStartsAppsAfterSidecars(t *testing.T) {
	h := newHarness(t)
	pod := newPod("sidecar", ctr("app", appV1))
	pod.Spec.InitContainers = []v1.Container{sidecar("proxy", sideImg), ctr("init", initImg)}
	h.probes.set(func(p *fakeProbes) { p.notStarted["proxy"] = true })

	h.mustSync(pod)
	assert.Equal(t, running, h.latest(pod, "proxy").State)
	assert.Empty(t, h.instances(pod, "init"), "the next init container waits for the sidecar's start")
	st := h.podStatus(pod)
	assert.Equal(t, v1.PodPending, st.Phase)
	assert.Equal(t, ptr.To(false), containerStatus(t, st, "proxy").Started)
	assert.Equal(t, "containers with incomplete status: [proxy init]", podCondition(t, st, v1.PodInitialized).Message)

	h.mustSync(pod)
	assert.Empty(t, h.instances(pod, "init"))

	h.probes.set(func(p *fakeProbes) { p.notStarted["proxy"] = false })
	h.mustSync(pod)
	assert.Equal(t, running, h.latest(pod, "init").State)
	h.exit(pod, "init", 0)
	h.mustSync(pod)
	app := h.latest(pod, "app")
	assert.Equal(t, running, app.State)
	st = h.podStatus(pod)
	assert.Equal(t, v1.PodRunning, st.Phase)
	assert.Equal(t, v1.ConditionTrue, podCondition(t, st, v1.PodInitialized).Status)
	assert.True(t, containerStatus(t, st, "proxy").Ready)

	h.exit(pod, "proxy", 1)
	h.mustSync(pod)
	proxy := h.latest(pod, "proxy")
	assert.Equal(t, running, proxy.State)
	assert.Equal(t, uint32(1), proxy.Metadata.Attempt)
	assert.Equal(t, app.Id, h.latest(pod, "app").Id, "the app keeps running")
	assert.Len(t, h.instances(pod, "init"), 1, "init containers do not run again")
	assert.Equal(t, int32(1), containerStatus(t, h.podStatus(pod), "proxy").RestartCount)
}

// CrashLoopBackOff as the kubelet's: the first restart is immediate, the
// next waits 10s from the exit, then 20s, ...
func TestSyncPodCrashLoopBackOff(t *testing.T) {
	h := newHarness(t)
	pod := newPod("crash", ctr("app", appV1))
	h.mustSync(pod)
	first := h.latest(pod, "app")
	h.exit(pod, "app", 1)

	h.mustSync(pod)
	second := h.latest(pod, "app")
	assert.Equal(t, running, second.State)
	assert.Equal(t, uint32(1), second.Metadata.Attempt)
	cs := containerStatus(t, h.podStatus(pod), "app")
	assert.Equal(t, int32(1), cs.RestartCount)
	require.NotNil(t, cs.LastTerminationState.Terminated)
	assert.Equal(t, int32(1), cs.LastTerminationState.Terminated.ExitCode)
	assert.Equal(t, "Error", cs.LastTerminationState.Terminated.Reason)
	assert.Equal(t, "crisim://"+first.Id, cs.LastTerminationState.Terminated.ContainerID)

	h.exit(pod, "app", 1)
	h.takeEvents()
	done, err := h.sync(pod)
	assert.False(t, done)
	require.ErrorContains(t, err, "CrashLoopBackOff: back-off 10s restarting failed container=app pod=default/crash")
	assert.Len(t, h.instances(pod, "app"), 2, "no restart inside the back-off")
	assert.True(t, hasEvent(h.takeEvents(), "BackOff", "Back-off restarting failed container app in pod default/crash"))
	st := h.podStatus(pod)
	assert.Equal(t, v1.PodRunning, st.Phase)
	cs = containerStatus(t, st, "app")
	require.NotNil(t, cs.State.Waiting)
	assert.Equal(t, "CrashLoopBackOff", cs.State.Waiting.Reason)
	assert.Equal(t, "back-off restarting failed container app in pod default/crash", cs.State.Waiting.Message)
	require.NotNil(t, cs.LastTerminationState.Terminated)
	assert.Equal(t, "crisim://"+second.Id, cs.LastTerminationState.Terminated.ContainerID)
	assert.False(t, cs.Ready)
	assert.Equal(t, v1.ConditionFalse, podCondition(t, st, v1.ContainersReady).Status)

	h.clk.Step(4 * time.Second)
	_, err = h.sync(pod)
	require.ErrorContains(t, err, "back-off 6s")
	h.clk.Step(6 * time.Second)
	h.mustSync(pod)
	third := h.latest(pod, "app")
	assert.Equal(t, uint32(2), third.Metadata.Attempt)
	assert.Equal(t, running, third.State)
	assert.Equal(t, int32(2), containerStatus(t, h.podStatus(pod), "app").RestartCount)

	h.exit(pod, "app", 1)
	_, err = h.sync(pod)
	require.ErrorContains(t, err, "back-off 20s", "the delay doubles")
	h.clk.Step(19 * time.Second)
	_, err = h.sync(pod)
	require.ErrorContains(t, err, "back-off 1s")
	h.clk.Step(time.Second)
	h.mustSync(pod)
	assert.Equal(t, uint32(3), h.latest(pod, "app").Metadata.Attempt)
}

// The restart policy decides what an exited app container leads to; the
// containers exit as scripted in the simulator.
func TestSyncPodRestartPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy      v1.RestartPolicy
		code        int32
		wantRestart bool
		wantPhase   v1.PodPhase
	}{
		{v1.RestartPolicyAlways, 0, true, v1.PodRunning},
		{v1.RestartPolicyAlways, 1, true, v1.PodRunning},
		{v1.RestartPolicyOnFailure, 0, false, v1.PodSucceeded},
		{v1.RestartPolicyOnFailure, 2, true, v1.PodRunning},
		{v1.RestartPolicyNever, 0, false, v1.PodSucceeded},
		{v1.RestartPolicyNever, 2, false, v1.PodFailed},
	} {
		t.Run(fmt.Sprintf("%s/exit%d", tc.policy, tc.code), func(t *testing.T) {
			h := newHarness(t)
			pod := newPod("policy", ctr("app", appV1))
			pod.Spec.RestartPolicy = tc.policy
			h.sim.Script(crisim.Match{Pod: "policy", Container: "app"}, crisim.Script{ExitAfter: 5 * time.Second, ExitCode: tc.code, Message: "bye"})
			h.mustSync(pod)
			h.clk.Step(5 * time.Second)
			h.awaitState(pod, "app", exited)

			done, err := h.sync(pod)
			require.NoError(t, err)
			assert.Equal(t, !tc.wantRestart, done, "done")
			st := h.podStatus(pod)
			assert.Equal(t, tc.wantPhase, st.Phase)
			cs := containerStatus(t, st, "app")
			if tc.wantRestart {
				assert.Len(t, h.instances(pod, "app"), 2)
				assert.NotNil(t, cs.State.Running)
				assert.Equal(t, int32(1), cs.RestartCount)
				return
			}
			assert.Len(t, h.instances(pod, "app"), 1)
			term := cs.State.Terminated
			require.NotNil(t, term)
			assert.Equal(t, tc.code, term.ExitCode)
			assert.Equal(t, map[bool]string{true: "Completed", false: "Error"}[tc.code == 0], term.Reason)
			assert.Equal(t, "bye", term.Message, "the runtime's message")
			assert.True(t, term.FinishedAt.Time.Equal(epoch.Add(5*time.Second)))
			assert.True(t, term.StartedAt.Time.Equal(epoch))
			assert.Equal(t, v1.ConditionFalse, podCondition(t, st, v1.PodReady).Status)
			if tc.wantPhase == v1.PodSucceeded {
				assert.Equal(t, "PodCompleted", podCondition(t, st, v1.PodInitialized).Reason)
			}

			// A finished pod stays finished.
			done, err = h.sync(pod)
			require.NoError(t, err)
			assert.True(t, done)
			assert.Len(t, h.instances(pod, "app"), 1)
		})
	}
}

// A failed liveness or startup probe kills the container (with the probe's
// own grace period when it sets one) and restarts it unless the pod never
// restarts; sidecars are restarted alike.
func TestSyncPodRestartsOnProbeFailure(t *testing.T) {
	for _, tc := range []struct {
		name        string
		container   string
		policy      v1.RestartPolicy
		startup     bool
		wantReason  string
		wantTimeout int64
		wantRestart bool
	}{
		{"liveness", "app", v1.RestartPolicyAlways, false, "failed liveness probe", 5, true},
		{"startup", "app", v1.RestartPolicyAlways, true, "failed startup probe", 30, true},
		{"liveness, Never", "app", v1.RestartPolicyNever, false, "failed liveness probe", 5, false},
		{"liveness of a sidecar", "proxy", v1.RestartPolicyNever, false, "failed liveness probe", 30, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			app := ctr("app", appV1)
			app.LivenessProbe = &v1.Probe{TerminationGracePeriodSeconds: ptr.To[int64](5)}
			app.StartupProbe = &v1.Probe{}
			pod := newPod("probes", app)
			pod.Spec.RestartPolicy = tc.policy
			pod.Spec.InitContainers = []v1.Container{sidecar("proxy", sideImg)}
			h.sim.Script(crisim.Match{Pod: "probes"}, crisim.Script{TermExitCode: 143})
			h.mustSync(pod)
			h.mustSync(pod) // the app starts after the sidecar
			victim := h.latest(pod, tc.container)
			h.takeEvents()
			h.probes.set(func(p *fakeProbes) {
				if tc.startup {
					p.startup[victim.Id] = true
				} else {
					p.liveness[victim.Id] = true
				}
			})

			h.mustSync(pod)
			assert.True(t, hasEvent(h.takeEvents(), "Killing", "Container "+tc.container+" "+tc.wantReason+", will be restarted"))
			require.NotEmpty(t, h.calls.stopCalls())
			assert.Equal(t, stopCall{victim.Id, tc.wantTimeout}, h.calls.stopCalls()[0])
			all := h.instances(pod, tc.container)
			assert.Equal(t, exited, all[0].State)
			assert.Equal(t, int32(143), all[0].ExitCode)
			if !tc.wantRestart {
				assert.Len(t, all, 1)
				done, err := h.sync(pod)
				require.NoError(t, err)
				assert.True(t, done, "the killed container ends the pod")
				assert.Equal(t, v1.PodFailed, h.podStatus(pod).Phase)
				return
			}
			require.Len(t, all, 2)
			assert.Equal(t, running, all[1].State)
			cs := containerStatus(t, h.podStatus(pod), tc.container)
			assert.Equal(t, int32(1), cs.RestartCount)
			require.NotNil(t, cs.LastTerminationState.Terminated)
			assert.Equal(t, int32(143), cs.LastTerminationState.Terminated.ExitCode)
		})
	}
}

// A change of the container's image, command, args, env or ports restarts
// it, whatever the restart policy; other changes do not.
func TestSyncPodRestartsOnSpecChange(t *testing.T) {
	h := newHarness(t)
	pod := newPod("change", ctr("app", appV1))
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	h.mustSync(pod)
	first := h.latest(pod, "app")
	h.takeEvents()

	same := pod.DeepCopy()
	same.Spec.Containers[0].WorkingDir = "/elsewhere"
	same.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
	h.mustSync(same)
	assert.Len(t, h.instances(pod, "app"), 1, "not part of the hash: no restart")

	for i, change := range []func(c *v1.Container){
		func(c *v1.Container) { c.Image = appV2 },
		func(c *v1.Container) { c.Command = []string{"sleep", "1"} },
		func(c *v1.Container) { c.Env = []v1.EnvVar{{Name: "A", Value: "b"}} },
		func(c *v1.Container) { c.Ports = []v1.ContainerPort{{ContainerPort: 80}} },
	} {
		change(&pod.Spec.Containers[0])
		h.mustSync(pod)
		all := h.instances(pod, "app")
		require.Len(t, all, i+2)
		assert.Equal(t, exited, all[i].State)
		assert.Equal(t, running, all[i+1].State)
		assert.Equal(t, uint32(i+1), all[i+1].Metadata.Attempt)
		assert.True(t, hasEvent(h.takeEvents(), "Killing", "Container app definition changed, will be restarted"))
	}
	assert.Equal(t, first.Id, h.instances(pod, "app")[0].Id)
	assert.Equal(t, appV2, h.latest(pod, "app").Image.Image)
	assert.Equal(t, int32(4), containerStatus(t, h.podStatus(pod), "app").RestartCount)
}

// The crash back-off is keyed by the spec: a crashing container whose spec
// changes starts at once.
func TestSyncPodSpecChangeSkipsOldBackOff(t *testing.T) {
	h := newHarness(t)
	pod := newPod("fix", ctr("app", appV1))
	h.mustSync(pod)
	h.exit(pod, "app", 1)
	h.mustSync(pod)
	h.exit(pod, "app", 1)
	_, err := h.sync(pod)
	require.ErrorContains(t, err, "CrashLoopBackOff")

	pod.Spec.Containers[0].Image = appV2
	h.mustSync(pod)
	latest := h.latest(pod, "app")
	assert.Equal(t, running, latest.State)
	assert.Equal(t, appV2, latest.Image.Image)
}

// Past activeDeadlineSeconds (counted on the syncer's clock from the pod's
// start on this node) the pod fails with DeadlineExceeded.
func TestSyncPodActiveDeadline(t *testing.T) {
	h := newHarness(t)
	pod := newPod("deadline", ctr("app", appV1))
	assert.False(t, h.s.PastDeadline(pod), "no deadline")
	pod.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
	assert.False(t, h.s.PastDeadline(pod), "not started here yet")
	h.mustSync(pod)
	h.takeEvents()

	h.clk.Step(29 * time.Second)
	assert.False(t, h.s.PastDeadline(pod))
	assert.False(t, h.mustSync(pod))
	h.clk.Step(time.Second)
	assert.True(t, h.s.PastDeadline(pod))

	done, err := h.sync(pod)
	require.NoError(t, err)
	assert.True(t, done, "the pod worker terminates it")
	st := h.podStatus(pod)
	assert.Equal(t, v1.PodFailed, st.Phase)
	assert.Equal(t, "DeadlineExceeded", st.Reason)
	assert.Equal(t, "Pod was active on the node longer than the specified deadline", st.Message)
	assert.True(t, hasEvent(h.takeEvents(), "DeadlineExceeded", "longer than the specified deadline"))
	assert.Equal(t, running, h.latest(pod, "app").State, "stopping is SyncTerminatingPod's")

	require.NoError(t, h.terminate(pod, 30, nil))
	assert.Equal(t, exited, h.latest(pod, "app").State)
	st = h.podStatus(pod)
	assert.Equal(t, v1.PodFailed, st.Phase, "a terminal phase is final")
	assert.Equal(t, "DeadlineExceeded", st.Reason)
	assert.NotNil(t, containerStatus(t, st, "app").State.Terminated)
}

// Image problems show as the container's waiting reason: ErrImageNeverPull,
// ErrImagePull and then ImagePullBackOff until the back-off ends.
func TestSyncPodImageProblems(t *testing.T) {
	t.Run("Never", func(t *testing.T) {
		h := newHarness(t)
		app := ctr("app", "example.com/missing:v1")
		app.ImagePullPolicy = v1.PullNever
		pod := newPod("never", app)
		_, err := h.sync(pod)
		require.ErrorContains(t, err, "ErrImageNeverPull")
		assert.Empty(t, h.instances(pod, "app"))
		assert.Zero(t, h.sim.Calls("PullImage"))
		st := h.podStatus(pod)
		cs := containerStatus(t, st, "app")
		require.NotNil(t, cs.State.Waiting)
		assert.Equal(t, "ErrImageNeverPull", cs.State.Waiting.Reason)
		assert.Equal(t, `Container image "example.com/missing:v1" is not present with pull policy of Never`, cs.State.Waiting.Message)
		assert.Equal(t, v1.PodPending, st.Phase)
		assert.True(t, hasEvent(h.takeEvents(), "ErrImageNeverPull", "example.com/missing:v1"))
	})
	t.Run("pull failure", func(t *testing.T) {
		h := newHarness(t)
		pod := newPod("pull", ctr("app", "example.com/remote:v1"))
		h.sim.Inject("PullImage", crisim.Fault{Err: grpcstatus.Error(codes.Unavailable, "registry down")})
		_, err := h.sync(pod)
		require.ErrorContains(t, err, "ErrImagePull")
		assert.Equal(t, "ErrImagePull", waitingReason(t, h.podStatus(pod), "app"))
		assert.Contains(t, containerStatus(t, h.podStatus(pod), "app").State.Waiting.Message, "registry down")
		events := h.takeEvents()
		assert.True(t, hasEvent(events, "Pulling", `Pulling image "example.com/remote:v1"`))
		assert.True(t, hasEvent(events, "Failed", "registry down"))
		assert.True(t, hasEvent(events, "Failed", "Error: ErrImagePull"))
		assert.Equal(t, 1, h.sim.Calls("PullImage"))

		_, err = h.sync(pod)
		require.ErrorContains(t, err, "ImagePullBackOff")
		assert.Equal(t, 1, h.sim.Calls("PullImage"), "no pull inside the back-off")
		cs := containerStatus(t, h.podStatus(pod), "app")
		assert.Equal(t, "ImagePullBackOff", cs.State.Waiting.Reason)
		assert.Contains(t, cs.State.Waiting.Message, `Back-off pulling image "example.com/remote:v1"`)
		assert.Contains(t, cs.State.Waiting.Message, "registry down", "with the last failure")
		assert.True(t, hasEvent(h.takeEvents(), "BackOff", `Back-off pulling image "example.com/remote:v1"`))

		h.sim.ClearFaults()
		h.clk.Step(10 * time.Second)
		h.mustSync(pod)
		assert.Equal(t, running, h.latest(pod, "app").State)
		assert.Nil(t, containerStatus(t, h.podStatus(pod), "app").State.Waiting)
		assert.True(t, hasEvent(h.takeEvents(), "Pulled", `Successfully pulled image "example.com/remote:v1"`))
	})
	t.Run("Always pulls a present image", func(t *testing.T) {
		h := newHarness(t)
		app := ctr("app", appV1)
		app.ImagePullPolicy = v1.PullAlways
		pod := newPod("always", app)
		h.mustSync(pod)
		assert.Equal(t, 1, h.sim.Calls("PullImage"))
		assert.Equal(t, running, h.latest(pod, "app").State)
	})
}

// fakeObjects serves configMaps and secrets from maps and records the
// pods registered.
type fakeObjects struct {
	mu           sync.Mutex
	configMaps   map[string]*v1.ConfigMap
	registered   []types.UID
	unregistered []types.UID
}

func (o *fakeObjects) ConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	if cm, ok := o.configMaps[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("configmaps"), name)
}

func (o *fakeObjects) Secret(_ context.Context, _, name string) (*v1.Secret, error) {
	return nil, apierrors.NewNotFound(v1.Resource("secrets"), name)
}

func (o *fakeObjects) Register(_ context.Context, pod *v1.Pod) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.registered = append(o.registered, pod.UID)
}

func (o *fakeObjects) Unregister(uid types.UID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.unregistered = append(o.unregistered, uid)
}

type fakeServices struct{ synced bool }

func (s fakeServices) List() ([]*v1.Service, error) { return nil, nil }
func (s fakeServices) HasSynced() bool              { return s.synced }

// A container whose config cannot be built waits with
// CreateContainerConfigError; one the runtime refuses with
// CreateContainerError. Both clear once the container is created.
func TestSyncPodCreateContainerErrors(t *testing.T) {
	cmEnv := []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "k"}}}}
	for _, tc := range []struct {
		name        string
		edit        func(*podsyncer.Config, *harness)
		pod         func(*v1.Pod)
		wantReason  string
		wantMessage string
	}{
		{name: "CreateContainer fails",
			edit: func(_ *podsyncer.Config, h *harness) {
				h.sim.Inject("CreateContainer", crisim.Fault{Err: grpcstatus.Error(codes.Internal, "disk full"), Times: 1})
			},
			wantReason: "CreateContainerError", wantMessage: "disk full"},
		{name: "configMap without Objects",
			pod:        func(p *v1.Pod) { p.Spec.Containers[0].Env = cmEnv },
			wantReason: "CreateContainerConfigError", wantMessage: "couldn't get configMap default/cfg"},
		{name: "runAsNonRoot with a root image",
			pod: func(p *v1.Pod) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
			},
			wantReason: "CreateContainerConfigError", wantMessage: "container has runAsNonRoot and image will run as root"},
		{name: "recursive read-only on a runtime without it",
			pod: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{{Name: "mnt", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
				p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "mnt", MountPath: "/mnt", ReadOnly: true,
					RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyEnabled)}}
			},
			wantReason: "CreateContainerConfigError",
			wantMessage: `failed to resolve recursive read-only mode: volume "mnt" requested recursive read-only mode, ` +
				"but it is not supported by the runtime"},
		{name: "services not read yet",
			edit:       func(cfg *podsyncer.Config, _ *harness) { cfg.Services = fakeServices{synced: false} },
			wantReason: "CreateContainerConfigError", wantMessage: "services have not yet been read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var edits []func(*podsyncer.Config, *harness)
			if tc.edit != nil {
				edits = append(edits, tc.edit)
			}
			h := newHarness(t, edits...)
			pod := newPod("cerr", ctr("app", appV1))
			if tc.pod != nil {
				tc.pod(pod)
			}
			_, err := h.sync(pod)
			require.ErrorContains(t, err, tc.wantMessage)
			st := h.podStatus(pod)
			cs := containerStatus(t, st, "app")
			require.NotNil(t, cs.State.Waiting)
			assert.Equal(t, tc.wantReason, cs.State.Waiting.Reason)
			assert.Contains(t, cs.State.Waiting.Message, tc.wantMessage)
			assert.Equal(t, v1.PodPending, st.Phase)
			assert.True(t, hasEvent(h.takeEvents(), "Failed", tc.wantMessage))
			if tc.wantReason == "CreateContainerError" {
				assert.Equal(t, 1, h.sim.Calls("CreateContainer"))
				assert.NotContains(t, cs.State.Waiting.Message, "rpc error", "the message without the gRPC prefix")
				h.mustSync(pod)
				assert.Equal(t, running, h.latest(pod, "app").State)
				assert.Nil(t, containerStatus(t, h.podStatus(pod), "app").State.Waiting, "the error is cleared")
			} else {
				assert.Zero(t, h.sim.Calls("CreateContainer"), "nothing reaches the runtime")
			}
		})
	}
}

// A runtime handler with recursive read-only mounts gets them for Enabled
// and IfPossible mounts (only on its own handler), and the statuses say so.
func TestSyncPodRecursiveReadOnly(t *testing.T) {
	h := newHarness(t, func(cfg *podsyncer.Config, _ *harness) {
		cfg.RecursiveReadOnlyMounts = func(handler string) bool { return handler == "" }
	})
	pod := newPod("rro", ctr("app", appV1))
	pod.Spec.Volumes = []v1.Volume{{Name: "mnt", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
		{Name: "mnt", MountPath: "/rro", ReadOnly: true, RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyEnabled)},
		{Name: "mnt", MountPath: "/rro-if-possible", ReadOnly: true, RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyIfPossible)},
		{Name: "mnt", MountPath: "/ro", ReadOnly: true},
		{Name: "mnt", MountPath: "/rw"}}
	h.mustSync(pod)
	rro := map[string]bool{}
	for _, m := range h.latest(pod, "app").Mounts {
		rro[m.ContainerPath] = m.RecursiveReadOnly
	}
	assert.Equal(t, map[string]bool{"/rro": true, "/rro-if-possible": true, "/ro": false, "/rw": false, "/etc/hosts": false}, rro)
	var modes []string
	for _, m := range containerStatus(t, h.podStatus(pod), "app").VolumeMounts {
		mode := "<nil>"
		if m.RecursiveReadOnly != nil {
			mode = string(*m.RecursiveReadOnly)
		}
		modes = append(modes, m.MountPath+"="+mode)
	}
	assert.Equal(t, []string{"/rro=Enabled", "/rro-if-possible=Enabled", "/ro=Disabled", "/rw=<nil>"}, modes)
}

// With Objects and Services the environment is resolved from them; the
// pod is registered with Objects on every sync and unregistered once it
// terminated.
func TestSyncPodObjectsAndServices(t *testing.T) {
	objs := &fakeObjects{configMaps: map[string]*v1.ConfigMap{"default/cfg": {Data: map[string]string{"k": "from-cm"}}}}
	h := newHarness(t, func(cfg *podsyncer.Config, _ *harness) {
		cfg.Objects = objs
		cfg.Services = fakeServices{synced: true}
	})
	pod := newPod("objs", ctr("app", appV1))
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "k"}}}}
	h.mustSync(pod)
	assert.Equal(t, "from-cm", envOf(h.calls.containerConfig("app"))["X"])
	h.mustSync(pod)
	require.NoError(t, h.terminate(pod, 30, nil))
	require.NoError(t, h.s.SyncTerminatedPod(h.ctx, pod))
	objs.mu.Lock()
	defer objs.mu.Unlock()
	assert.Equal(t, []types.UID{pod.UID, pod.UID}, objs.registered)
	assert.Equal(t, []types.UID{pod.UID}, objs.unregistered)
}

// A start the runtime refuses leaves the container CREATED (injected
// fault) or EXITED with StartError (scripted); either is replaced by a new
// instance on the next sync, init containers included.
func TestSyncPodStartFailures(t *testing.T) {
	t.Run("StartContainer fault on an init container", func(t *testing.T) {
		h := newHarness(t)
		pod := newPod("startfail", ctr("app", appV1))
		pod.Spec.RestartPolicy = v1.RestartPolicyNever
		pod.Spec.InitContainers = []v1.Container{ctr("init", initImg)}
		h.sim.Inject("StartContainer", crisim.Fault{Err: grpcstatus.Error(codes.Unknown, "no such file"), Times: 1})
		_, err := h.sync(pod)
		require.ErrorContains(t, err, "start container init")
		assert.Equal(t, created, h.latest(pod, "init").State)
		assert.True(t, hasEvent(h.takeEvents(), "Failed", "Error: no such file"))
		st := h.podStatus(pod)
		require.Len(t, st.InitContainerStatuses, 1)
		require.NotNil(t, st.InitContainerStatuses[0].State.Waiting)
		assert.Equal(t, "RunContainerError", st.InitContainerStatuses[0].State.Waiting.Reason, "as the kubelet's reason cache")

		h.mustSync(pod) // a new instance, even with restartPolicy Never
		all := h.instances(pod, "init")
		require.Len(t, all, 2)
		assert.Equal(t, running, all[1].State)
		assert.Equal(t, uint32(1), all[1].Metadata.Attempt)
	})
	t.Run("StartError script on an app container", func(t *testing.T) {
		h := newHarness(t)
		pod := newPod("starterr", ctr("app", appV1))
		h.sim.Script(crisim.Match{Pod: "starterr", Container: "app"}, crisim.Script{StartError: errors.New("exec format error")})
		_, err := h.sync(pod)
		require.ErrorContains(t, err, "start container app")
		// As the kubelet: it will be restarted, so it waits with the
		// start's error; the failed instance is its last state.
		cs := containerStatus(t, h.podStatus(pod), "app")
		require.NotNil(t, cs.State.Waiting)
		assert.Equal(t, "RunContainerError", cs.State.Waiting.Reason)
		require.NotNil(t, cs.LastTerminationState.Terminated)
		assert.Equal(t, "StartError", cs.LastTerminationState.Terminated.Reason)
		assert.Equal(t, int32(128), cs.LastTerminationState.Terminated.ExitCode)
		assert.Equal(t, "exec format error", cs.LastTerminationState.Terminated.Message)

		_, err = h.sync(pod) // the first restart is immediate; it fails again
		require.ErrorContains(t, err, "start container app")
		assert.Len(t, h.instances(pod, "app"), 2)
		_, err = h.sync(pod)
		require.ErrorContains(t, err, "CrashLoopBackOff")
		assert.Len(t, h.instances(pod, "app"), 2)
	})
}

// postStart hooks run after the start; a failing one kills the container.
func TestSyncPodPostStartHook(t *testing.T) {
	for _, tc := range []struct {
		name    string
		exit    int32
		wantErr bool
	}{{"succeeds", 0, false}, {"fails", 1, true}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			app := ctr("app", appV1)
			app.Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/warm"}}}}
			pod := newPod("poststart", app)
			h.sim.ScriptExec(crisim.Match{Pod: "poststart"}, []string{"/bin/warm"}, crisim.ExecResult{ExitCode: tc.exit, Stderr: "secret detail"})
			_, err := h.sync(pod)
			assert.Equal(t, 1, h.sim.Calls("ExecSync"))
			events := h.takeEvents()
			if !tc.wantErr {
				require.NoError(t, err)
				assert.Equal(t, running, h.latest(pod, "app").State)
				assert.NotContains(t, reasons(events), "FailedPostStartHook")
				return
			}
			require.ErrorContains(t, err, "container app: PostStartHook failed")
			assert.Equal(t, exited, h.latest(pod, "app").State, "killed")
			assert.True(t, hasEvent(events, "FailedPostStartHook", "PostStartHook failed"))
			for _, e := range events {
				assert.NotContains(t, e, "secret detail", "hook output stays out of events")
			}
		})
	}
}

// A sandbox that cannot be created fails the sync with
// FailedCreatePodSandBox, and nothing else is created.
func TestSyncPodSandboxFailures(t *testing.T) {
	for _, tc := range []struct {
		name        string
		edit        func(*podsyncer.Config, *harness)
		pod         func(*v1.Pod)
		wantMessage string
		wantCalls   int // RunPodSandbox calls that reached the runtime
	}{
		{name: "RunPodSandbox fails",
			edit: func(_ *podsyncer.Config, h *harness) {
				h.sim.Inject("RunPodSandbox", crisim.Fault{Err: grpcstatus.Error(codes.Unavailable, "cni not ready"), Times: 1})
			},
			wantMessage: "cni not ready", wantCalls: 1},
		{name: "RuntimeClass without lookup",
			pod:         func(p *v1.Pod) { p.Spec.RuntimeClassName = ptr.To("gvisor") },
			wantMessage: `runtime class "gvisor": no RuntimeClass lookup on this agent`},
		{name: "RuntimeClass lookup fails",
			edit: func(cfg *podsyncer.Config, _ *harness) {
				cfg.RuntimeClass = func(context.Context, string) (string, error) { return "", errors.New("runtimeclass not found") }
			},
			pod:         func(p *v1.Pod) { p.Spec.RuntimeClassName = ptr.To("gvisor") },
			wantMessage: "runtimeclass not found"},
		{name: "user namespaces",
			pod:         func(p *v1.Pod) { p.Spec.HostUsers = ptr.To(false) },
			wantMessage: "hostUsers: false (user namespaces) is not supported"},
		{name: "user namespaces on a handler without them",
			edit: func(cfg *podsyncer.Config, _ *harness) {
				cfg.UserNamespaces = &fakeUserNamespaces{}
				cfg.UserNamespacesSupported = func(string) bool { return false }
			},
			pod:         func(p *v1.Pod) { p.Spec.HostUsers = ptr.To(false) },
			wantMessage: `RuntimeClass handler "" does not support user namespaces`},
		{name: "invalid hostname",
			pod:         func(p *v1.Pod) { p.Spec.Hostname = "Not_A_Label" },
			wantMessage: `pod Hostname "Not_A_Label" is not a valid DNS label`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var edits []func(*podsyncer.Config, *harness)
			if tc.edit != nil {
				edits = append(edits, tc.edit)
			}
			h := newHarness(t, edits...)
			pod := newPod("sbfail", ctr("app", appV1))
			if tc.pod != nil {
				tc.pod(pod)
			}
			done, err := h.sync(pod)
			assert.False(t, done)
			require.ErrorContains(t, err, "create pod sandbox")
			require.ErrorContains(t, err, tc.wantMessage)
			assert.True(t, hasEvent(h.takeEvents(), "FailedCreatePodSandBox", tc.wantMessage))
			assert.Equal(t, tc.wantCalls, h.sim.Calls("RunPodSandbox"))
			assert.Empty(t, h.sandboxes(pod))
			assert.Zero(t, h.sim.Calls("CreateContainer"))
			if tc.wantCalls > 0 { // a transient failure: the next sync succeeds
				h.mustSync(pod)
				assert.Equal(t, running, h.latest(pod, "app").State)
			}
		})
	}
}

// A RuntimeClass is resolved to the runtime handler the sandbox runs with.
func TestSyncPodRuntimeClassHandler(t *testing.T) {
	var asked []string
	h := newHarness(t, func(cfg *podsyncer.Config, _ *harness) {
		cfg.RuntimeClass = func(_ context.Context, name string) (string, error) {
			asked = append(asked, name)
			return "runsc", nil
		}
	})
	pod := newPod("rc", ctr("app", appV1))
	pod.Spec.RuntimeClassName = ptr.To("gvisor")
	h.mustSync(pod)
	sbs := h.sandboxes(pod)
	require.Len(t, sbs, 1)
	assert.Equal(t, "runsc", sbs[0].RuntimeHandler)
	assert.Equal(t, []string{"gvisor"}, asked)
}

// The sync writes a status even when the sandbox cannot be created, as
// the kubelet does (its status is generated before the runtime sync) and
// as the syncer itself does when volumes or the pod cgroup fail.
func TestSyncPodSandboxFailureWritesStatus(t *testing.T) {
	h := newHarness(t)
	pod := newPod("sbstatus", ctr("app", appV1))
	h.sim.Inject("RunPodSandbox", crisim.Fault{Err: grpcstatus.Error(codes.Unavailable, "cni not ready")})
	_, err := h.sync(pod)
	require.Error(t, err)
	st, ok := h.status.PodStatus(pod.UID)
	require.True(t, ok, "no status was written")
	assert.Equal(t, v1.PodPending, st.Phase)
	assert.Equal(t, v1.ConditionFalse, podCondition(t, st, v1.PodReadyToStartContainers).Status)
	assert.Equal(t, "ContainerCreating", waitingReason(t, st, "app"))
}

// Volumes that cannot be set up hold the pod back before anything runs;
// the status is written all the same.
func TestSyncPodVolumeFailure(t *testing.T) {
	h := newHarness(t)
	pod := newPod("vols", ctr("app", appV1))
	mountErr := errors.New("mount failed: no such device")
	h.vols.failSetUp(mountErr)
	done, err := h.sync(pod)
	assert.False(t, done)
	require.ErrorIs(t, err, mountErr)
	assert.Zero(t, h.sim.Calls("RunPodSandbox"))
	assert.Empty(t, h.sandboxes(pod))
	st := h.podStatus(pod)
	assert.Equal(t, v1.PodPending, st.Phase)
	assert.Equal(t, "ContainerCreating", waitingReason(t, st, "app"))
	assert.Equal(t, v1.ConditionFalse, podCondition(t, st, v1.PodReadyToStartContainers).Status)
	assert.Equal(t, v1.ConditionFalse, podCondition(t, st, v1.PodReady).Status)

	h.vols.failSetUp(nil)
	h.mustSync(pod)
	assert.Equal(t, running, h.latest(pod, "app").State)
}

// A pod whose sandbox died gets a new one (the attempt counted), its
// containers' restart counts continuing; a pod that never restarts is
// finished instead. Both with and without a PLEG.
func TestSyncPodSandboxRecreation(t *testing.T) {
	for _, withPLEG := range []bool{false, true} {
		name := map[bool]string{false: "listing", true: "PLEG"}[withPLEG]
		t.Run(name+"/Always", func(t *testing.T) {
			h, relist := newHarnessMaybePLEG(t, withPLEG)
			pod := newPod("resandbox", ctr("app", appV1))
			h.mustSync(pod)
			old := h.sandboxes(pod)[0]
			h.clk.Step(time.Second)
			require.NoError(t, h.rt.StopPodSandbox(h.ctx, old.Id))
			relist()

			h.mustSync(pod)
			sbs := h.sandboxes(pod)
			require.Len(t, sbs, 2)
			assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, sbs[0].State)
			assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_READY, sbs[1].State)
			assert.Equal(t, uint32(1), sbs[1].Metadata.Attempt)
			app := h.latest(pod, "app")
			assert.Equal(t, running, app.State)
			assert.Equal(t, uint32(1), app.Metadata.Attempt, "attempts continue across sandboxes")
			cs := containerStatus(t, h.podStatus(pod), "app")
			assert.Equal(t, int32(1), cs.RestartCount)
			require.NotNil(t, cs.LastTerminationState.Terminated, "the last state comes from the old sandbox")
			assert.Equal(t, int32(137), cs.LastTerminationState.Terminated.ExitCode)
		})
		t.Run(name+"/Never", func(t *testing.T) {
			h, relist := newHarnessMaybePLEG(t, withPLEG)
			pod := newPod("gone", ctr("app", appV1))
			pod.Spec.RestartPolicy = v1.RestartPolicyNever
			h.mustSync(pod)
			h.clk.Step(time.Second)
			require.NoError(t, h.rt.StopPodSandbox(h.ctx, h.sandboxes(pod)[0].Id))
			relist()

			done, err := h.sync(pod)
			require.NoError(t, err)
			assert.True(t, done)
			assert.Len(t, h.sandboxes(pod), 1, "no new sandbox")
			st := h.podStatus(pod)
			assert.Equal(t, v1.PodFailed, st.Phase)
			assert.Equal(t, v1.ConditionFalse, podCondition(t, st, v1.PodReadyToStartContainers).Status)
		})
		// OnFailure: a container that succeeded is not run again in the
		// new sandbox (a Job's work is not repeated); the others are.
		t.Run(name+"/OnFailure", func(t *testing.T) {
			h, relist := newHarnessMaybePLEG(t, withPLEG)
			pod := newPod("job", ctr("once", appV1), ctr("worker", appV1))
			pod.Spec.RestartPolicy = v1.RestartPolicyOnFailure
			h.mustSync(pod)
			h.exit(pod, "once", 0)
			relist()
			assert.False(t, h.mustSync(pod))
			h.clk.Step(time.Second)
			require.NoError(t, h.rt.StopPodSandbox(h.ctx, h.sandboxes(pod)[0].Id))
			relist()

			assert.False(t, h.mustSync(pod), "the worker still runs")
			require.Len(t, h.sandboxes(pod), 2)
			assert.Len(t, h.instances(pod, "once"), 1, "not run again")
			workers := h.instances(pod, "worker")
			require.Len(t, workers, 2)
			assert.Equal(t, running, workers[1].State)
			relist()
			h.mustSync(pod)
			assert.Len(t, h.instances(pod, "once"), 1, "nor on a later sync")
			term := containerStatus(t, h.podStatus(pod), "once").State.Terminated
			require.NotNil(t, term, "its exit is still reported")
			assert.Equal(t, int32(0), term.ExitCode)
		})
		// OnFailure, every container succeeded before the sandbox went:
		// no new sandbox, the pod is done.
		t.Run(name+"/OnFailure all succeeded", func(t *testing.T) {
			h, relist := newHarnessMaybePLEG(t, withPLEG)
			pod := newPod("jobdone", ctr("once", appV1), ctr("twice", appV1))
			pod.Spec.RestartPolicy = v1.RestartPolicyOnFailure
			h.mustSync(pod)
			h.exit(pod, "once", 0)
			h.exit(pod, "twice", 0)
			h.clk.Step(time.Second)
			require.NoError(t, h.rt.StopPodSandbox(h.ctx, h.sandboxes(pod)[0].Id))
			relist()

			assert.True(t, h.mustSync(pod), "done")
			assert.Len(t, h.sandboxes(pod), 1, "no new sandbox")
			assert.Len(t, h.instances(pod, "once"), 1)
			assert.Len(t, h.instances(pod, "twice"), 1)
			assert.Equal(t, v1.PodSucceeded, h.podStatus(pod).Phase)
		})
	}
}

// newHarnessMaybePLEG is a harness whose syncer reads a real PLEG when
// withPLEG; relist then does the full relist a pod worker's barrier
// waits for (a no-op without PLEG, where the syncer lists the runtime).
func newHarnessMaybePLEG(t *testing.T, withPLEG bool) (*harness, func()) {
	if !withPLEG {
		return newHarness(t), func() {}
	}
	var gen *pleg.Generator
	h := newHarness(t, func(cfg *podsyncer.Config, h *harness) {
		var err error
		gen, err = pleg.New(pleg.Config{Runtime: h.rt, Clock: h.clk, RuntimeName: cfg.RuntimeName, Sink: func(pleg.PodLifecycleEvent) {}})
		require.NoError(t, err)
		cfg.States = gen
	})
	return h, func() {
		_, err := gen.Relist(h.ctx)
		require.NoError(t, err)
	}
}

// With a PLEG the syncer reads the state its cache holds (which the pod
// worker's barrier makes fresh), and relists the pod after changing it.
func TestSyncPodReadsPLEG(t *testing.T) {
	var gen *pleg.Generator
	var events []pleg.PodLifecycleEvent
	var mu sync.Mutex
	h := newHarness(t, func(cfg *podsyncer.Config, h *harness) {
		var err error
		gen, err = pleg.New(pleg.Config{Runtime: h.rt, Clock: h.clk, RuntimeName: cfg.RuntimeName, Sink: func(e pleg.PodLifecycleEvent) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, e)
		}})
		require.NoError(t, err)
		cfg.States = gen
	})
	pod := newPod("pleg", ctr("app", appV1))
	h.mustSync(pod)
	first := h.latest(pod, "app")
	ps, err := gen.Cache().Get(pod.UID)
	require.NoError(t, err)
	require.Len(t, ps.ContainerStatuses, 1, "the syncer relisted the pod after starting it")
	assert.Equal(t, first.Id, ps.ContainerStatuses[0].Id)
	mu.Lock()
	assert.NotEmpty(t, events, "the relist reported the start")
	mu.Unlock()

	// The container exits; until a relist the cache (and so the syncer)
	// does not know.
	h.exit(pod, "app", 1)
	h.mustSync(pod)
	assert.Len(t, h.instances(pod, "app"), 1, "stale cache: nothing to do")
	assert.NotNil(t, containerStatus(t, h.podStatus(pod), "app").State.Running)

	_, err = gen.RelistPod(h.ctx, pod.UID)
	require.NoError(t, err)
	h.mustSync(pod)
	all := h.instances(pod, "app")
	require.Len(t, all, 2)
	assert.Equal(t, running, all[1].State)
	cs := containerStatus(t, h.podStatus(pod), "app")
	assert.Equal(t, int32(1), cs.RestartCount)
	assert.Equal(t, "crisim://"+all[1].Id, cs.ContainerID)
	require.NotNil(t, cs.LastTerminationState.Terminated)
	assert.Equal(t, int32(1), cs.LastTerminationState.Terminated.ExitCode)

	require.NoError(t, h.terminate(pod, 30, nil))
	assert.Equal(t, exited, h.latest(pod, "app").State)
	assert.Nil(t, containerStatus(t, h.podStatus(pod), "app").State.Running, "read back through a relist")
	assert.Equal(t, v1.ConditionFalse, podCondition(t, h.podStatus(pod), v1.PodReadyToStartContainers).Status)
}

// A terminating pod's liveness and startup probes stop before its
// containers do, as in the kubelet's SyncTerminatingPod: no probe execs into
// a container being stopped, and no failure restarts it.
func TestSyncTerminatingPodStopsLivenessFirst(t *testing.T) {
	h := newHarness(t)
	pod := newPod("probed", ctr("app", appV1))
	h.mustSync(pod)
	stopsBefore := -1
	h.probes.onStop = func() { stopsBefore = h.sim.Calls("StopContainer") }
	require.NoError(t, h.terminate(pod, 30, nil))
	assert.Equal(t, []types.UID{pod.UID}, h.probes.stoppedPods())
	assert.Equal(t, 0, stopsBefore, "probes stopped before the containers")
	assert.Equal(t, 1, h.sim.Calls("StopContainer"))
}

// SyncTerminatingPod runs preStop hooks within the grace period; the
// runtime gets what is left of it to stop the container.
func TestSyncTerminatingPodPreStopWithinGrace(t *testing.T) {
	h := newHarness(t)
	app := ctr("app", appV1)
	app.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/drain"}}}}
	pod := newPod("prestop", app)
	// The container ignores SIGTERM: it is killed when the grace ends.
	h.sim.Script(crisim.Match{Pod: "prestop"}, crisim.Script{StopDelay: time.Hour})
	h.sim.ScriptExec(crisim.Match{Pod: "prestop"}, []string{"/bin/drain"}, crisim.ExecResult{Delay: 3 * time.Second})
	h.mustSync(pod)
	id := h.latest(pod, "app").Id

	errc := make(chan error, 1)
	go func() { errc <- h.s.SyncTerminatingPod(h.ctx, pod, 10, nil) }()
	// The hook's timeout, the syncer's grace timer and the exec's delay.
	h.awaitWaiters(3)
	h.clk.Step(3 * time.Second)
	// The hook took 3s: the runtime's kill timer for the 7s left.
	require.Eventually(t, func() bool { return h.sim.Calls("StopContainer") == 1 && h.clk.Waiters() == 1 },
		10*time.Second, time.Millisecond)
	h.clk.Step(7 * time.Second)
	select {
	case err := <-errc:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		require.FailNow(t, "SyncTerminatingPod did not return")
	}
	h.drain()

	assert.Equal(t, 1, h.sim.Calls("ExecSync"))
	assert.Equal(t, []stopCall{{id, 7}}, h.calls.stopCalls())
	c := h.latest(pod, "app")
	assert.Equal(t, exited, c.State)
	assert.Equal(t, int32(137), c.ExitCode, "killed at the end of the grace period")
	assert.Equal(t, epoch.Add(10*time.Second).UnixNano(), c.FinishedAt)
	assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, h.sandboxes(pod)[0].State)
	st := h.podStatus(pod)
	term := containerStatus(t, st, "app").State.Terminated
	require.NotNil(t, term)
	assert.Equal(t, int32(137), term.ExitCode)
	assert.Equal(t, v1.ConditionFalse, podCondition(t, st, v1.PodReadyToStartContainers).Status)
	assert.Equal(t, v1.ConditionFalse, podCondition(t, st, v1.PodReady).Status)
}

// App containers stop first, then sidecars one by one in reverse order;
// the status function edits the final status; a failing preStop hook is
// reported and the container stopped all the same.
func TestSyncTerminatingPodStopsSidecarsLast(t *testing.T) {
	h := newHarness(t)
	app := ctr("app", appV1)
	app.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/fail"}}}}
	pod := newPod("order", app, ctr("web", appV1))
	pod.Spec.InitContainers = []v1.Container{sidecar("first", sideImg), sidecar("second", sideImg)}
	h.sim.ScriptExec(crisim.Match{Pod: "order"}, []string{"/bin/fail"}, crisim.ExecResult{ExitCode: 2})
	h.mustSync(pod)
	h.mustSync(pod)
	h.mustSync(pod)
	names := map[string]string{}
	for _, n := range []string{"app", "web", "first", "second"} {
		c := h.latest(pod, n)
		require.Equal(t, running, c.State, n)
		names[c.Id] = n
	}
	h.takeEvents()

	err := h.terminate(pod, 30, func(st *v1.PodStatus) {
		st.Phase, st.Reason, st.Message = v1.PodFailed, "Evicted", "The node was low on resource: memory."
	})
	require.NoError(t, err)
	var order []string
	for _, s := range h.calls.stopCalls() {
		order = append(order, names[s.id])
		assert.Equal(t, int64(30), s.timeout)
	}
	require.Len(t, order, 4)
	assert.ElementsMatch(t, []string{"app", "web"}, order[:2], "app containers together first")
	assert.Equal(t, []string{"second", "first"}, order[2:], "then sidecars in reverse order")
	for _, n := range []string{"app", "web", "first", "second"} {
		assert.Equal(t, exited, h.latest(pod, n).State, n)
	}
	assert.True(t, hasEvent(h.takeEvents(), "FailedPreStopHook", "PreStopHook failed"))
	st := h.podStatus(pod)
	assert.Equal(t, v1.PodFailed, st.Phase)
	assert.Equal(t, "Evicted", st.Reason)
	assert.NotNil(t, containerStatus(t, st, "first").State.Terminated)

	// Terminating again (a shorter grace) finds nothing to stop.
	require.NoError(t, h.terminate(pod, 0, nil))
	assert.Len(t, h.calls.stopCalls(), 4)
}

// A pod that finished for good while a sidecar runs is done; the sidecar
// is not restarted and stops with SyncTerminatingPod.
func TestSyncPodFinishedWithRunningSidecar(t *testing.T) {
	h := newHarness(t)
	pod := newPod("job", ctr("app", appV1))
	pod.Spec.RestartPolicy = v1.RestartPolicyOnFailure
	pod.Spec.InitContainers = []v1.Container{sidecar("proxy", sideImg)}
	h.mustSync(pod)
	h.mustSync(pod)
	h.exit(pod, "app", 0)
	done, err := h.sync(pod)
	require.NoError(t, err)
	assert.True(t, done)
	assert.Equal(t, running, h.latest(pod, "proxy").State, "the pod worker stops it")
	assert.Len(t, h.instances(pod, "app"), 1)

	require.NoError(t, h.terminate(pod, 30, nil))
	assert.Equal(t, exited, h.latest(pod, "proxy").State)
	assert.Len(t, h.instances(pod, "proxy"), 1)
	assert.Equal(t, v1.PodSucceeded, h.podStatus(pod).Phase)
}

// SyncTerminatingRuntimePod stops what the runtime holds for a pod the host
// has no config for, with a 1s grace and no hooks.
func TestSyncTerminatingRuntimePod(t *testing.T) {
	h := newHarness(t)
	labels := map[string]string{"io.kubernetes.pod.uid": "uid-orphan", "io.kubernetes.pod.name": "orphan", "io.kubernetes.pod.namespace": "default"}
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "orphan", Namespace: "default", Uid: "uid-orphan"}, Labels: labels}
	sb, err := h.rt.RunPodSandbox(h.ctx, sbCfg, "")
	require.NoError(t, err)
	var ids []string
	for _, name := range []string{"a", "b"} {
		id, err := h.rt.CreateContainer(h.ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name},
			Image: &runtimeapi.ImageSpec{Image: appV1}, Labels: labels}, sbCfg)
		require.NoError(t, err)
		require.NoError(t, h.rt.StartContainer(h.ctx, id))
		ids = append(ids, id)
	}
	// Another pod's sandbox is left alone.
	other := newPod("other", ctr("app", appV1))
	h.mustSync(other)

	require.NoError(t, h.s.SyncTerminatingRuntimePod(h.ctx, &podworkers.RuntimePod{UID: "uid-orphan", Name: "orphan", Namespace: "default"}))
	assert.ElementsMatch(t, []stopCall{{ids[0], 1}, {ids[1], 1}}, h.calls.stopCalls())
	for _, id := range ids {
		st, err := h.rt.ContainerStatus(h.ctx, id, false)
		require.NoError(t, err)
		assert.Equal(t, exited, st.Status.State)
	}
	sbSt, err := h.rt.PodSandboxStatus(h.ctx, sb, false)
	require.NoError(t, err)
	assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, sbSt.Status.State)
	assert.Equal(t, running, h.latest(other, "app").State)
	assert.Zero(t, h.sim.Calls("ExecSync"))
}

// SyncTerminatedPod tears the volumes down, and removes the sandboxes (and
// so the dead containers) only of a pod being deleted.
func TestSyncTerminatedPod(t *testing.T) {
	for _, deleting := range []bool{false, true} {
		t.Run(map[bool]string{false: "finished", true: "deleted"}[deleting], func(t *testing.T) {
			h := newHarness(t)
			pod := newPod("done", ctr("app", appV1))
			pod.Spec.RestartPolicy = v1.RestartPolicyNever
			h.mustSync(pod)
			h.exit(pod, "app", 0)
			assert.True(t, h.mustSync(pod))
			require.NoError(t, h.terminate(pod, 30, nil))
			if deleting {
				pod.DeletionTimestamp = &metav1.Time{Time: h.clk.Now()}
			}

			require.NoError(t, h.s.SyncTerminatedPod(h.ctx, pod))
			_, tornDown := h.vols.calls()
			assert.Equal(t, []types.UID{pod.UID}, tornDown)
			st := h.podStatus(pod)
			assert.Equal(t, v1.PodSucceeded, st.Phase)
			if deleting {
				assert.Empty(t, h.sandboxes(pod))
				assert.Empty(t, h.instances(pod, "app"))
				return
			}
			require.Len(t, h.sandboxes(pod), 1, "a finished pod keeps its dead containers for its logs")
			assert.Equal(t, exited, h.latest(pod, "app").State)
			assert.NotNil(t, containerStatus(t, st, "app").State.Terminated)
		})
	}
}

// Reject fails a pod admission refused, without touching the runtime.
func TestReject(t *testing.T) {
	h := newHarness(t)
	pod := newPod("rejected", ctr("app", appV1))
	pod.Spec.InitContainers = []v1.Container{ctr("init", initImg)}
	h.s.Reject(h.ctx, pod, "OutOfcpu", "Node didn't have enough resource: cpu, requested: 4000, used: 0, capacity: 2000")
	st := h.podStatus(pod)
	assert.Equal(t, v1.PodFailed, st.Phase)
	assert.Equal(t, "OutOfcpu", st.Reason)
	assert.Equal(t, "Pod was rejected: Node didn't have enough resource: cpu, requested: 4000, used: 0, capacity: 2000", st.Message, "as the kubelet's rejectPod")
	assert.Equal(t, "PodInitializing", waitingReason(t, st, "app"), "not initialized")
	assert.Equal(t, "PodInitializing", waitingReason(t, st, "init"))
	assert.Equal(t, v1.ConditionFalse, podCondition(t, st, v1.PodReadyToStartContainers).Status)
	assert.Zero(t, h.sim.Calls("RunPodSandbox"))
	assert.Empty(t, h.takeEvents())

	// Later syncs keep the terminal phase and its reason.
	require.NoError(t, h.s.SyncTerminatedPod(h.ctx, pod))
	st = h.podStatus(pod)
	assert.Equal(t, v1.PodFailed, st.Phase)
	assert.Equal(t, "OutOfcpu", st.Reason)
}

// The sandbox config carries the pod's identity, hostname, DNS, port
// mappings, namespaces and log directory.
func TestSandboxConfig(t *testing.T) {
	nodeHosts := filepath.Join(t.TempDir(), "hosts")
	require.NoError(t, os.WriteFile(nodeHosts, []byte("192.0.2.1\tnode1\n"), 0o644))
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	require.NoError(t, os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch corp.example\n"), 0o644))
	ports := []v1.ContainerPort{{Name: "http", ContainerPort: 8080, HostPort: 30080, Protocol: v1.ProtocolTCP},
		{ContainerPort: 53, Protocol: v1.ProtocolUDP}, {Name: "http", ContainerPort: 8080, HostPort: 30080, Protocol: v1.ProtocolTCP}}
	for _, tc := range []struct {
		name      string
		network   podnet.Config
		pod       func(*v1.Pod)
		check     func(t *testing.T, cfg *runtimeapi.PodSandboxConfig)
		wantEvent string
	}{
		{name: "cluster DNS", network: podnet.Config{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ResolvConf: resolv},
			pod: func(p *v1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "myhost", "sub" },
			check: func(t *testing.T, cfg *runtimeapi.PodSandboxConfig) {
				assert.Equal(t, "myhost", cfg.Hostname)
				assert.Equal(t, []string{"10.96.0.10"}, cfg.DnsConfig.Servers)
				assert.Equal(t, []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"}, cfg.DnsConfig.Searches)
				assert.Equal(t, []string{"ndots:5"}, cfg.DnsConfig.Options)
				assert.Equal(t, runtimeapi.NamespaceMode_POD, cfg.Linux.SecurityContext.NamespaceOptions.Network)
			}},
		{name: "FQDN hostname", network: podnet.Config{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"},
			pod: func(p *v1.Pod) {
				p.Spec.Hostname, p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = "myhost", "sub", ptr.To(true)
			},
			check: func(t *testing.T, cfg *runtimeapi.PodSandboxConfig) {
				assert.Equal(t, "myhost.sub.default.svc.cluster.local", cfg.Hostname)
			}},
		{name: "dnsPolicy Default", network: podnet.Config{ClusterDNS: []string{"10.96.0.10"}, ResolvConf: resolv},
			pod: func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSDefault },
			check: func(t *testing.T, cfg *runtimeapi.PodSandboxConfig) {
				assert.Equal(t, "sbcfg", cfg.Hostname)
				assert.Equal(t, []string{"192.0.2.53"}, cfg.DnsConfig.Servers)
				assert.Equal(t, []string{"corp.example"}, cfg.DnsConfig.Searches)
			}},
		{name: "no cluster DNS", network: podnet.Config{},
			check: func(t *testing.T, cfg *runtimeapi.PodSandboxConfig) {
				assert.Equal(t, []string{"127.0.0.1"}, cfg.DnsConfig.Servers)
			},
			wantEvent: "MissingClusterDNS"},
		{name: "host network", network: podnet.Config{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"},
			pod: func(p *v1.Pod) { p.Spec.HostNetwork, p.Spec.HostPID = true, true },
			check: func(t *testing.T, cfg *runtimeapi.PodSandboxConfig) {
				assert.Empty(t, cfg.Hostname, "the node's")
				ns := cfg.Linux.SecurityContext.NamespaceOptions
				assert.Equal(t, runtimeapi.NamespaceMode_NODE, ns.Network)
				assert.Equal(t, runtimeapi.NamespaceMode_NODE, ns.Pid)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(cfg *podsyncer.Config, _ *harness) {
				cfg.Network = tc.network
				cfg.NodeHostsFile = nodeHosts
			})
			pod := newPod("sbcfg", ctr("app", appV1))
			pod.Spec.Containers[0].Ports = ports
			if tc.pod != nil {
				tc.pod(pod)
			}
			h.mustSync(pod)
			cfgs := h.calls.sandboxConfigs()
			require.Len(t, cfgs, 1)
			cfg := cfgs[0]
			assert.Equal(t, "sbcfg", cfg.Metadata.Name)
			assert.Equal(t, "default", cfg.Metadata.Namespace)
			assert.Equal(t, "uid-sbcfg", cfg.Metadata.Uid)
			assert.Equal(t, uint32(0), cfg.Metadata.Attempt)
			wantLabels := map[string]string{"io.kubernetes.pod.name": "sbcfg", "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": "uid-sbcfg"}
			assert.Equal(t, wantLabels, cfg.Labels)
			assert.Equal(t, podsyncer.PodLogDir(h.logsDir, pod), cfg.LogDirectory)
			assert.DirExists(t, cfg.LogDirectory)
			assert.Equal(t, filepath.Join(h.logsDir, "default_sbcfg_uid-sbcfg"), cfg.LogDirectory)
			require.Len(t, cfg.PortMappings, 2, "a port named twice counts once")
			assert.Equal(t, []string{"TCP 8080 30080", "UDP 53 0"}, portStrings(cfg.PortMappings))
			tc.check(t, cfg)
			if tc.wantEvent != "" {
				assert.Contains(t, reasons(h.takeEvents()), tc.wantEvent)
			} else {
				assert.NotContains(t, reasons(h.takeEvents()), "MissingClusterDNS")
			}

			// The runtime holds the same identity.
			sbs := h.sandboxes(pod)
			require.Len(t, sbs, 1)
			assert.Equal(t, wantLabels, sbs[0].Labels)
			assert.Equal(t, "uid-sbcfg", sbs[0].Metadata.Uid)
			assert.Equal(t, running, h.latest(pod, "app").State)
			if pod.Spec.HostNetwork {
				b, err := os.ReadFile(filepath.Join(h.vols.PodDir(pod.UID), "etc-hosts"))
				require.NoError(t, err)
				assert.Contains(t, string(b), "192.0.2.1\tnode1", "a host-network pod's /etc/hosts is the node's")
			}
		})
	}
}

func portStrings(pms []*runtimeapi.PortMapping) []string {
	var out []string
	for _, p := range pms {
		out = append(out, fmt.Sprintf("%s %d %d", p.Protocol, p.ContainerPort, p.HostPort))
	}
	return out
}

// An ephemeral container joins its target's process namespace; it waits
// for the target to run and is never restarted.
func TestSyncPodEphemeralContainer(t *testing.T) {
	h := newHarness(t)
	pod := newPod("debug", ctr("app", appV1))
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg", Image: appV1},
		TargetContainerName: "app"}}
	_, err := h.sync(pod)
	require.ErrorContains(t, err, `target container "app" is not running`)
	assert.Equal(t, running, h.latest(pod, "app").State, "app containers start regardless")
	assert.Equal(t, "CreateContainerConfigError", waitingReason(t, h.podStatus(pod), "dbg"))

	h.mustSync(pod)
	dbg := h.latest(pod, "dbg")
	assert.Equal(t, running, dbg.State)
	ns := h.calls.containerConfig("dbg").Linux.SecurityContext.NamespaceOptions
	assert.Equal(t, runtimeapi.NamespaceMode_TARGET, ns.Pid)
	assert.Equal(t, h.latest(pod, "app").Id, ns.TargetId)
	st := h.podStatus(pod)
	require.Len(t, st.EphemeralContainerStatuses, 1)
	assert.NotNil(t, st.EphemeralContainerStatuses[0].State.Running)

	h.exit(pod, "dbg", 0)
	h.mustSync(pod)
	assert.Len(t, h.instances(pod, "dbg"), 1, "ephemeral containers are never restarted")
	assert.NotNil(t, containerStatus(t, h.podStatus(pod), "dbg").State.Terminated)
}

// objectRecorder records each event with the object it is about.
type objectRecorder struct {
	mu     sync.Mutex
	events []recordedEvent
}

type recordedEvent struct {
	object runtime.Object
	reason string
}

func (r *objectRecorder) Event(o runtime.Object, _, reason, _ string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, recordedEvent{o, reason})
}

func (r *objectRecorder) Eventf(o runtime.Object, typ, reason, _ string, _ ...any) {
	r.Event(o, typ, reason, "")
}

func (r *objectRecorder) AnnotatedEventf(o runtime.Object, _ map[string]string, typ, reason, _ string, _ ...any) {
	r.Event(o, typ, reason, "")
}

func (r *objectRecorder) take() []recordedEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// Container events name the container by its field path.
func TestContainerEventsNameTheContainer(t *testing.T) {
	rec := &objectRecorder{}
	h := newHarness(t, func(cfg *podsyncer.Config, _ *harness) { cfg.Recorder = rec })
	pod := newPod("paths", ctr("app", appV1))
	pod.Spec.InitContainers = []v1.Container{ctr("init", initImg)}
	h.mustSync(pod)
	h.exit(pod, "init", 0)
	h.mustSync(pod)
	paths := sets.New[string]()
	for _, e := range rec.take() {
		ref, ok := e.object.(*v1.ObjectReference)
		require.True(t, ok, "%T", e.object)
		assert.Equal(t, "Pod", ref.Kind)
		assert.Equal(t, pod.UID, ref.UID)
		paths.Insert(ref.FieldPath)
	}
	assert.Equal(t, sets.New("spec.initContainers{init}", "spec.containers{app}"), paths)
}

// ImageVolume pulls an image volume's image as its pull policy says, with
// the API's default (Always for :latest and untagged references), and
// reports to the pod.
func TestImagePullerImageVolume(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ref      string
		policy   v1.PullPolicy
		present  bool
		wantPull bool
		wantErr  string
	}{
		{name: "latest", ref: "example.com/data:latest", present: true, wantPull: true},
		{name: "untagged", ref: "example.com/data", present: true, wantPull: true},
		{name: "untagged with registry port", ref: "localhost:5000/data", present: true, wantPull: true},
		{name: "tagged present", ref: "example.com/data:v1", present: true, wantPull: false},
		{name: "tagged missing", ref: "example.com/data:v1", present: false, wantPull: true},
		{name: "latest IfNotPresent", ref: "example.com/data:latest", policy: v1.PullIfNotPresent, present: true, wantPull: false},
		{name: "Never missing", ref: "example.com/data:v1", policy: v1.PullNever, present: false, wantErr: "ErrImageNeverPull"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if tc.present {
				h.sim.AddImage(crisim.Image{Ref: tc.ref})
			}
			rec := &objectRecorder{}
			p, err := podsyncer.NewImagePuller(podsyncer.ImagePullerConfig{Images: h.img, Recorder: rec, Clock: h.clk, PodLogsDir: h.logsDir})
			require.NoError(t, err)
			pod := newPod("vol", ctr("app", appV1))
			ref, err := p.ImageVolume(h.ctx, pod, &v1.ImageVolumeSource{Reference: tc.ref, PullPolicy: tc.policy})
			events := rec.take()
			require.NotEmpty(t, events)
			for _, e := range events {
				assert.Same(t, pod, e.object, "events go to the pod")
			}
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				assert.Zero(t, h.sim.Calls("PullImage"))
				return
			}
			require.NoError(t, err)
			assert.NotEmpty(t, ref)
			img, err := h.img.ImageStatus(h.ctx, &runtimeapi.ImageSpec{Image: tc.ref}, false)
			require.NoError(t, err)
			require.NotNil(t, img.Image)
			assert.Equal(t, img.Image.Id, ref)
			assert.Equal(t, map[bool]int{true: 1, false: 0}[tc.wantPull], h.sim.Calls("PullImage"))
			want := "Pulled"
			if tc.wantPull {
				want = "Pulling"
			}
			assert.Equal(t, want, events[0].reason)
		})
	}
}

func TestNewImagePullerValidation(t *testing.T) {
	_, err := podsyncer.NewImagePuller(podsyncer.ImagePullerConfig{})
	require.ErrorContains(t, err, "Images is required")
	h := newHarness(t)
	_, err = podsyncer.NewImagePuller(podsyncer.ImagePullerConfig{Images: h.img, MaxParallelPulls: -1})
	require.NoError(t, err, "negative: unbounded, as --serialize-image-pulls=false")
}

// New names every required field that is missing.
func TestNewValidation(t *testing.T) {
	h := newHarness(t)
	full := podsyncer.Config{Runtime: h.rt, Images: h.img, RuntimeName: "crisim", Status: h.status, Volumes: h.vols}
	for _, tc := range []struct {
		field string
		clear func(*podsyncer.Config)
	}{
		{"Runtime", func(c *podsyncer.Config) { c.Runtime = nil }},
		{"Images", func(c *podsyncer.Config) { c.Images = nil }},
		{"RuntimeName", func(c *podsyncer.Config) { c.RuntimeName = "" }},
		{"Status", func(c *podsyncer.Config) { c.Status = nil }},
		{"Volumes", func(c *podsyncer.Config) { c.Volumes = nil }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			cfg := full
			tc.clear(&cfg)
			s, err := podsyncer.New(cfg)
			require.ErrorContains(t, err, tc.field+" is required")
			assert.Nil(t, s)
		})
	}
	_, err := podsyncer.New(podsyncer.Config{})
	require.Error(t, err)
	for _, f := range []string{"Runtime", "Images", "RuntimeName", "Status", "Volumes"} {
		assert.ErrorContains(t, err, f+" is required")
	}
	s, err := podsyncer.New(full)
	require.NoError(t, err, "every optional field may be zero")
	require.NotNil(t, s)
	var _ podworkers.Syncer = s
}

// Only the required fields, a log directory and the masked paths (so that
// neither /var/log/pods nor /sys is touched): no Probes, Recorder, Objects,
// Node, Services, States, Puller or Clock. The pod runs.
func TestSyncPodMinimalConfig(t *testing.T) {
	h := newHarness(t)
	status, err := podstatus.New(podstatus.Config{})
	require.NoError(t, err)
	s, err := podsyncer.New(podsyncer.Config{Runtime: h.rt, Images: h.img, RuntimeName: "crisim", Status: status, Volumes: h.vols,
		PodLogsDir: h.logsDir, MaskedPaths: []string{}})
	require.NoError(t, err)
	pod := newPod("minimal", ctr("app", appV1))
	done, err := s.SyncPod(h.ctx, podworkers.UpdateSync, pod, nil)
	require.NoError(t, err)
	assert.False(t, done)
	assert.Equal(t, running, h.latest(pod, "app").State)
	st, ok := status.PodStatus(pod.UID)
	require.True(t, ok)
	assert.Equal(t, v1.PodRunning, st.Phase)
	assert.Equal(t, ptr.To(true), containerStatus(t, st, "app").Started, "without a prober every container has started")
}

// Without a prober, readiness is "as if no probes" (Config.Probes): a
// running container without a readiness probe is ready, as on the kubelet.
func TestSyncPodWithoutProbesIsReady(t *testing.T) {
	h := newHarness(t, func(cfg *podsyncer.Config, _ *harness) { cfg.Probes = nil })
	pod := newPod("noprobes", ctr("app", appV1))
	h.mustSync(pod)
	st := h.podStatus(pod)
	assert.True(t, containerStatus(t, st, "app").Ready)
	assert.Equal(t, v1.ConditionTrue, podCondition(t, st, v1.ContainersReady).Status)
	assert.Equal(t, v1.ConditionTrue, podCondition(t, st, v1.PodReady).Status)
}

// A running container whose readiness probe fails keeps running but makes
// the pod unready.
func TestSyncPodUnreadyContainer(t *testing.T) {
	h := newHarness(t)
	pod := newPod("unready", ctr("app", appV1), ctr("web", appV1))
	h.probes.set(func(p *fakeProbes) { p.unready["web"] = true })
	h.mustSync(pod)
	st := h.podStatus(pod)
	assert.Equal(t, v1.PodRunning, st.Phase)
	assert.True(t, containerStatus(t, st, "app").Ready)
	assert.False(t, containerStatus(t, st, "web").Ready)
	ready := podCondition(t, st, v1.PodReady)
	assert.Equal(t, v1.ConditionFalse, ready.Status)
	assert.Equal(t, "ContainersNotReady", ready.Reason)
	assert.Equal(t, "containers with unready status: [web]", ready.Message)
	assert.True(t, slices.ContainsFunc(st.ContainerStatuses, func(cs v1.ContainerStatus) bool { return cs.State.Running != nil && cs.Name == "web" }))
}

// After SyncTerminatingPod stopped everything the pod is terminal: the
// kubelet's SyncTerminatingPod generates its final status with
// podIsTerminal (getPhase), Succeeded when every container exited 0,
// Failed otherwise, whatever the restart policy.
func TestSyncTerminatingPodFinalPhase(t *testing.T) {
	for _, tc := range []struct {
		termExit  int32
		wantPhase v1.PodPhase
	}{{0, v1.PodSucceeded}, {143, v1.PodFailed}} {
		t.Run(string(tc.wantPhase), func(t *testing.T) {
			h := newHarness(t)
			pod := newPod("final", ctr("app", appV1))
			h.sim.Script(crisim.Match{Pod: "final"}, crisim.Script{TermExitCode: tc.termExit})
			h.mustSync(pod)
			pod.DeletionTimestamp = &metav1.Time{Time: h.clk.Now()}
			require.NoError(t, h.terminate(pod, 30, nil))
			assert.Equal(t, exited, h.latest(pod, "app").State)
			assert.Equal(t, tc.wantPhase, h.podStatus(pod).Phase)
		})
	}
}

// A container stopped because its pod is being deleted will not be
// restarted: its status is Terminated, not a CrashLoopBackOff wait, even
// if it crashed (and was restarted) just before.
func TestSyncTerminatingPodAfterCrashIsTerminated(t *testing.T) {
	h := newHarness(t)
	pod := newPod("crashdel", ctr("app", appV1))
	h.mustSync(pod)
	h.exit(pod, "app", 1)
	h.mustSync(pod) // restarted: the back-off now counts
	pod.DeletionTimestamp = &metav1.Time{Time: h.clk.Now()}
	require.NoError(t, h.terminate(pod, 30, nil))
	cs := containerStatus(t, h.podStatus(pod), "app")
	assert.Nil(t, cs.State.Waiting, "waiting for a restart that will never come")
	require.NotNil(t, cs.State.Terminated)
	assert.Equal(t, int32(0), cs.State.Terminated.ExitCode)
}

// fakeNode is the node's facts.
type fakeNode struct{}

func (fakeNode) HostIPs() []string { return []string{"192.0.2.10", "2001:db8::10"} }
func (fakeNode) Allocatable() v1.ResourceList {
	return v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")}
}
func (fakeNode) MemoryCapacity() int64 { return 4 << 30 }

// The node's addresses reach the status and the environment; its memory
// sizes a Burstable container's OOM score adjustment; a host-network pod
// has the node's addresses.
func TestSyncPodNodeFacts(t *testing.T) {
	h := newHarness(t, func(cfg *podsyncer.Config, _ *harness) { cfg.Node = fakeNode{} })
	app := ctr("app", appV1)
	app.Env = []v1.EnvVar{
		{Name: "HOST_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
		{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "CPU_LIMIT", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
	}
	app.Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}
	pod := newPod("node", app)
	h.mustSync(pod)
	st := h.podStatus(pod)
	assert.Equal(t, "192.0.2.10", st.HostIP)
	assert.Equal(t, []v1.HostIP{{IP: "192.0.2.10"}, {IP: "2001:db8::10"}}, st.HostIPs)
	assert.Equal(t, v1.PodQOSBurstable, st.QOSClass)
	cfg := h.calls.containerConfig("app")
	env := envOf(cfg)
	assert.Equal(t, "192.0.2.10", env["HOST_IP"])
	assert.Equal(t, st.PodIP, env["POD_IP"])
	assert.Equal(t, "2", env["CPU_LIMIT"], "no limit: the node's allocatable")
	assert.Equal(t, int64(750), cfg.Linux.Resources.OomScoreAdj, "1000 - 1000*1Gi/4Gi")

	hostNet := newPod("hostnet", ctr("app", appV1))
	hostNet.Spec.HostNetwork = true
	h.mustSync(hostNet)
	st = h.podStatus(hostNet)
	assert.Equal(t, "192.0.2.10", st.PodIP)
	assert.Equal(t, []v1.PodIP{{IP: "192.0.2.10"}, {IP: "2001:db8::10"}}, st.PodIPs)
}

// In-place resize with an allocation manager: a resize that fits is
// applied to the running container (or restarts it when its resize policy
// says so, whatever the pod's restart policy); one that does not fit is
// pending.
func TestSyncPodInPlaceResize(t *testing.T) {
	alloc, err := allocation.New(allocation.Config{
		Admit: func(_ context.Context, p *v1.Pod, _ []*v1.Pod) kubetypes.AdmitResult {
			if p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() > 1000 {
				return kubetypes.AdmitResult{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu"}
			}
			return kubetypes.AdmitResult{Admit: true}
		},
		Allocatable: func() v1.ResourceList { return v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")} },
	})
	require.NoError(t, err)
	h := newHarness(t, func(cfg *podsyncer.Config, _ *harness) { cfg.Allocation = alloc })
	res := func(cpuReq, cpuLim, mem string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpuReq)},
			Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpuLim), v1.ResourceMemory: resource.MustParse(mem)}}
	}
	app := ctr("app", appV1)
	app.Resources = res("100m", "200m", "128Mi")
	app.ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	pod := newPod("resize", app)
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	h.mustSync(pod)
	first := h.latest(pod, "app")
	assert.Equal(t, int64(20000), first.Resources.Linux.CpuQuota)
	h.takeEvents()

	// CPU (NotRequired): updated in place.
	pod.Generation = 2
	pod.Spec.Containers[0].Resources = res("200m", "400m", "128Mi")
	h.mustSync(pod)
	same := h.latest(pod, "app")
	assert.Equal(t, first.Id, same.Id, "not restarted")
	assert.Equal(t, int64(40000), same.Resources.Linux.CpuQuota, "UpdateContainerResources")
	events := h.takeEvents()
	assert.True(t, hasEvent(events, "ResizeStarted", "Pod resize started"))
	assert.True(t, hasEvent(events, "ResizeCompleted", "Pod resize completed"))
	cs := containerStatus(t, h.podStatus(pod), "app")
	require.NotNil(t, cs.Resources)
	assert.True(t, cs.Resources.Limits.Cpu().Equal(resource.MustParse("400m")))
	assert.True(t, cs.AllocatedResources.Cpu().Equal(resource.MustParse("200m")))

	// Memory (RestartContainer): restarted with the new limit.
	pod.Generation = 3
	pod.Spec.Containers[0].Resources = res("200m", "400m", "256Mi")
	h.mustSync(pod)
	all := h.instances(pod, "app")
	require.Len(t, all, 2)
	assert.Equal(t, exited, all[0].State)
	assert.Equal(t, running, all[1].State)
	assert.Equal(t, int64(256<<20), all[1].Resources.Linux.MemoryLimitInBytes)
	assert.True(t, hasEvent(h.takeEvents(), "Killing", "Container app resize requires restart, will be restarted"))

	// More than the node admits: pending, nothing changes.
	pod.Generation = 4
	pod.Spec.Containers[0].Resources = res("1500m", "1500m", "256Mi")
	h.mustSync(pod)
	assert.Len(t, h.instances(pod, "app"), 2)
	assert.True(t, hasEvent(h.takeEvents(), "ResizeDeferred", "Node didn't have enough resource: cpu"))
	pending := podCondition(t, h.podStatus(pod), v1.PodResizePending)
	assert.Equal(t, allocation.ReasonDeferred, pending.Reason)
	assert.Equal(t, int64(40000), h.latest(pod, "app").Resources.Linux.CpuQuota)

	pod.Generation = 5
	pod.Spec.Containers[0].Resources = res("3", "3", "256Mi")
	h.mustSync(pod)
	assert.True(t, hasEvent(h.takeEvents(), "ResizeInfeasible", "Node didn't have enough capacity: cpu"))
	assert.Equal(t, allocation.ReasonInfeasible, podCondition(t, h.podStatus(pod), v1.PodResizePending).Reason)

	require.NoError(t, h.terminate(pod, 30, nil))
	require.NoError(t, h.s.SyncTerminatedPod(h.ctx, pod))
	_, ok := alloc.Actuated(pod.UID, all[1].Id)
	assert.False(t, ok, "the allocation is forgotten")
}

// Pod-level resources: a container without its own limits runs with the
// pod's; resizing them updates it in place or restarts it as its resize
// policy says, and the pod status reports the pod-level allocation and
// what the pod runs with.
func TestSyncPodLevelResize(t *testing.T) {
	alloc, err := allocation.New(allocation.Config{
		Admit: func(context.Context, *v1.Pod, []*v1.Pod) kubetypes.AdmitResult {
			return kubetypes.AdmitResult{Admit: true}
		},
	})
	require.NoError(t, err)
	h := newHarness(t, func(cfg *podsyncer.Config, _ *harness) { cfg.Allocation = alloc })
	plr := func(cpu, mem string) *v1.ResourceRequirements {
		r := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
		return &v1.ResourceRequirements{Requests: r, Limits: r.DeepCopy()}
	}
	app := ctr("app", appV1)
	app.ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	pod := newPod("plr", app)
	pod.Spec.Resources = plr("200m", "128Mi")
	h.mustSync(pod)
	first := h.latest(pod, "app")
	assert.Equal(t, int64(20000), first.Resources.Linux.CpuQuota, "the pod's CPU limit")
	assert.Equal(t, int64(128<<20), first.Resources.Linux.MemoryLimitInBytes, "the pod's memory limit")
	st := h.podStatus(pod)
	assert.True(t, st.AllocatedResources.Cpu().Equal(resource.MustParse("200m")))
	require.NotNil(t, st.Resources)
	assert.True(t, st.Resources.Limits.Memory().Equal(resource.MustParse("128Mi")))
	cs := containerStatus(t, st, "app")
	require.NotNil(t, cs.Resources)
	assert.Empty(t, cs.Resources.Limits, "the container sets no limits of its own")
	h.takeEvents()

	// CPU (NotRequired): the container is updated in place.
	pod.Generation = 2
	pod.Spec.Resources = plr("400m", "128Mi")
	h.mustSync(pod)
	same := h.latest(pod, "app")
	assert.Equal(t, first.Id, same.Id, "not restarted")
	assert.Equal(t, int64(40000), same.Resources.Linux.CpuQuota)
	assert.True(t, hasEvent(h.takeEvents(), "ResizeCompleted", "Pod resize completed"))
	st = h.podStatus(pod)
	assert.True(t, st.Resources.Limits.Cpu().Equal(resource.MustParse("400m")))
	for _, c := range st.Conditions {
		assert.NotEqual(t, v1.PodResizeInProgress, c.Type)
	}

	// Memory (RestartContainer): restarted with the new pod-level limit,
	// once.
	pod.Generation = 3
	pod.Spec.Resources = plr("400m", "256Mi")
	h.mustSync(pod)
	h.mustSync(pod)
	all := h.instances(pod, "app")
	require.Len(t, all, 2)
	assert.Equal(t, running, all[1].State)
	assert.Equal(t, int64(256<<20), all[1].Resources.Linux.MemoryLimitInBytes)
	assert.True(t, h.podStatus(pod).Resources.Limits.Memory().Equal(resource.MustParse("256Mi")))
}

// A container's termination message is what it wrote to its
// terminationMessagePath (a file the syncer creates and mounts), or with
// FallbackToLogsOnError after a failure, the tail of its log.
func TestSyncPodTerminationMessage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  v1.TerminationMessagePolicy
		write   string
		code    int32
		want    string
		logLine []string
	}{
		{name: "file", policy: v1.TerminationMessageReadFile, write: "all done", code: 0, want: "all done"},
		{name: "file wins over logs", policy: v1.TerminationMessageFallbackToLogsOnError, write: "written", code: 1, want: "written",
			logLine: []string{"starting"}},
		{name: "logs on error", policy: v1.TerminationMessageFallbackToLogsOnError, code: 1, want: "starting\npanic: boom\n",
			logLine: []string{"starting", "panic: boom"}},
		{name: "no logs on success", policy: v1.TerminationMessageFallbackToLogsOnError, code: 0, want: "",
			logLine: []string{"starting"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			app := ctr("app", appV1)
			app.TerminationMessagePath = "/dev/termination-log"
			app.TerminationMessagePolicy = tc.policy
			pod := newPod("msg", app)
			pod.Spec.RestartPolicy = v1.RestartPolicyNever
			if tc.logLine != nil {
				h.sim.ScriptLogs(crisim.Match{Pod: "msg"}, tc.logLine...)
			}
			h.mustSync(pod)
			var hostPath string
			for _, m := range h.latest(pod, "app").Mounts {
				if m.ContainerPath == "/dev/termination-log" {
					hostPath = m.HostPath
				}
			}
			require.NotEmpty(t, hostPath, "the termination message file is mounted")
			assert.True(t, strings.HasPrefix(hostPath, filepath.Join(h.vols.PodDir(pod.UID), "containers", "app")+"/"), hostPath)
			fi, err := os.Stat(hostPath)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o666), fi.Mode().Perm(), "any user may write it")
			if tc.write != "" {
				require.NoError(t, os.WriteFile(hostPath, []byte(tc.write), 0o666))
			}
			h.exit(pod, "app", tc.code)
			assert.True(t, h.mustSync(pod))
			term := containerStatus(t, h.podStatus(pod), "app").State.Terminated
			require.NotNil(t, term)
			assert.Equal(t, tc.want, term.Message)
		})
	}
}

// postStart and preStop hooks over HTTP and as a sleep on the syncer's
// clock.
func TestSyncPodHTTPAndSleepHooks(t *testing.T) {
	var mu sync.Mutex
	var got []string
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.URL.RequestURI()+" "+r.Header.Get("X-Hook")+" "+r.UserAgent())
		w.WriteHeader(status)
	}))
	defer srv.Close()
	port, err := strconv.Atoi(srv.URL[strings.LastIndexByte(srv.URL, ':')+1:])
	require.NoError(t, err)

	h := newHarness(t)
	app := ctr("app", appV1)
	app.Ports = []v1.ContainerPort{{Name: "admin", ContainerPort: int32(port)}}
	app.Lifecycle = &v1.Lifecycle{
		PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromString("admin"),
			Path: "warm?level=2", HTTPHeaders: []v1.HTTPHeader{{Name: "X-Hook", Value: "post"}}}},
		PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}},
	}
	pod := newPod("hooks", app)
	h.mustSync(pod)
	mu.Lock()
	assert.Equal(t, []string{"/warm?level=2 post kube-lifecycle/1.36"}, got)
	mu.Unlock()
	id := h.latest(pod, "app").Id

	errc := make(chan error, 1)
	go func() { errc <- h.s.SyncTerminatingPod(h.ctx, pod, 30, nil) }()
	h.awaitWaiters(3) // the hook's timeout, the grace timer and the sleep
	h.clk.Step(5 * time.Second)
	select {
	case err := <-errc:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		require.FailNow(t, "SyncTerminatingPod did not return")
	}
	assert.Equal(t, []stopCall{{id, 25}}, h.calls.stopCalls(), "the sleep used 5s of the grace period")
	assert.Equal(t, exited, h.latest(pod, "app").State)

	// A hook answered with an error status fails the start.
	mu.Lock()
	status = http.StatusInternalServerError
	mu.Unlock()
	again := newPod("hooks2", app)
	_, err = h.sync(again)
	require.ErrorContains(t, err, "PostStartHook failed")
	assert.Equal(t, exited, h.latest(again, "app").State)
	assert.True(t, hasEvent(h.takeEvents(), "FailedPostStartHook", ""))
}

// The pod's image pull secrets are read through Objects; a missing one is
// reported and the pull goes on without it.
func TestSyncPodImagePullSecrets(t *testing.T) {
	objs := &fakeObjects{}
	h := newHarness(t, func(cfg *podsyncer.Config, _ *harness) { cfg.Objects = objs })
	pod := newPod("secrets", ctr("app", "example.com/private:v1"))
	pod.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "regcred"}}
	h.mustSync(pod)
	assert.Equal(t, running, h.latest(pod, "app").State)
	assert.Equal(t, 1, h.sim.Calls("PullImage"))
	events := h.takeEvents()
	assert.True(t, hasEvent(events, "FailedToRetrieveImagePullSecret", "default/regcred"))
	assert.True(t, hasEvent(events, "Pulled", `Successfully pulled image "example.com/private:v1"`))
}

// The pod's and containers' security settings reach the CRI configs.
func TestSyncPodSecurityContext(t *testing.T) {
	h := newHarness(t)
	app := ctr("app", appV1)
	app.SecurityContext = &v1.SecurityContext{Privileged: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities:    &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}, Drop: []v1.Capability{"ALL"}},
		AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
	pod := newPod("sec", app)
	pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsNonRoot: ptr.To(true), FSGroup: ptr.To[int64](2000),
		SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/audit.json")},
		Sysctls:        []v1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}}
	pod.Spec.ShareProcessNamespace = ptr.To(true)
	h.mustSync(pod)
	assert.Equal(t, running, h.latest(pod, "app").State, "runAsUser 1000 satisfies runAsNonRoot")

	sb := h.calls.sandboxConfigs()[0].Linux
	assert.True(t, sb.SecurityContext.Privileged, "privileged if a container is")
	assert.Equal(t, int64(1000), sb.SecurityContext.RunAsUser.Value)
	assert.Equal(t, map[string]string{"net.core.somaxconn": "1024"}, sb.Sysctls)
	assert.Equal(t, runtimeapi.NamespaceMode_POD, sb.SecurityContext.NamespaceOptions.Pid)

	sc := h.calls.containerConfig("app").Linux.SecurityContext
	assert.True(t, sc.Privileged)
	assert.True(t, sc.ReadonlyRootfs)
	assert.Equal(t, int64(1000), sc.RunAsUser.Value)
	assert.Equal(t, []int64{2000}, sc.SupplementalGroups)
	assert.Equal(t, []string{"NET_ADMIN"}, sc.Capabilities.AddCapabilities)
	assert.Equal(t, []string{"ALL"}, sc.Capabilities.DropCapabilities)
	assert.Equal(t, runtimeapi.SecurityProfile_Localhost, sc.Seccomp.ProfileType)
	assert.Equal(t, filepath.Join(h.cfg.SeccompRoot, "profiles/audit.json"), sc.Seccomp.LocalhostRef, "under Config.SeccompRoot")
	assert.Equal(t, runtimeapi.SecurityProfile_RuntimeDefault, sc.Apparmor.ProfileType)
	assert.Equal(t, runtimeapi.NamespaceMode_POD, sc.NamespaceOptions.Pid, "shareProcessNamespace")
}

// A container exiting with a code its RestartAllContainers rule matches
// resets the pod in place: every container is removed (the running ones
// killed without grace) and the pod starts over from its first init
// container in the same sandbox; restart counts and last terminations
// carry over in the status, as the kubelet's.
func TestSyncPodRestartAllContainers(t *testing.T) {
	h := newHarness(t)
	src := ctr("src", appV1)
	src.RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
	src.RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	pod := newPod("reset", src, ctr("app", appV1))
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Spec.InitContainers = []v1.Container{ctr("init", initImg), sidecar("proxy", sideImg)}

	h.mustSync(pod)
	h.exit(pod, "init", 0)
	h.mustSync(pod)
	h.mustSync(pod)
	require.Equal(t, running, h.latest(pod, "src").State)
	require.Equal(t, running, h.latest(pod, "app").State)
	st := h.podStatus(pod)
	require.Equal(t, v1.PodRunning, st.Phase)
	assert.Equal(t, v1.ConditionFalse, podCondition(t, st, v1.AllContainersRestarting).Status)
	sandbox := h.sandboxes(pod)[0].Id
	h.takeEvents()

	h.exit(pod, "src", 42)
	stops := len(h.calls.stopCalls())

	done := h.mustSync(pod)
	assert.False(t, done)
	// Killed without grace: the app, then the sidecar; init and src had exited.
	var killed []int64
	for _, c := range h.calls.stopCalls()[stops:] {
		killed = append(killed, c.timeout)
	}
	assert.Equal(t, []int64{0, 0}, killed)
	assert.True(t, hasEvent(h.takeEvents(), "Killing", "the pod restarts all its containers"))
	// Everything was removed; the pod started over in the same sandbox.
	assert.Len(t, h.sandboxes(pod), 1)
	assert.Equal(t, sandbox, h.sandboxes(pod)[0].Id)
	require.Len(t, h.instances(pod, "init"), 1)
	assert.Equal(t, running, h.latest(pod, "init").State)
	assert.Empty(t, h.instances(pod, "proxy"))
	assert.Empty(t, h.instances(pod, "src"))
	assert.Empty(t, h.instances(pod, "app"))
	st = h.podStatus(pod)
	assert.Equal(t, v1.PodPending, st.Phase, "initializing again")
	assert.Equal(t, v1.ConditionTrue, podCondition(t, st, v1.PodInitialized).Status, "once initialized, stays so")
	assert.Equal(t, v1.ConditionFalse, podCondition(t, st, v1.AllContainersRestarting).Status, "the reset is done")
	for _, name := range []string{"init", "proxy", "src", "app"} {
		cs := containerStatus(t, st, name)
		assert.Equal(t, int32(1), cs.RestartCount, name)
		require.NotNil(t, cs.LastTerminationState.Terminated, name)
		assert.Equal(t, "RestartingAllContainers", cs.LastTerminationState.Terminated.Reason, name)
		assert.Equal(t, int32(137), cs.LastTerminationState.Terminated.ExitCode, name)
	}
	assert.NotNil(t, containerStatus(t, st, "init").State.Running)
	assert.Equal(t, "PodInitializing", waitingReason(t, st, "app"))

	h.exit(pod, "init", 0)
	h.mustSync(pod)
	h.mustSync(pod)
	st = h.podStatus(pod)
	assert.Equal(t, v1.PodRunning, st.Phase)
	for _, name := range []string{"proxy", "src", "app"} {
		cs := containerStatus(t, st, name)
		assert.NotNil(t, cs.State.Running, name)
		assert.Equal(t, int32(1), cs.RestartCount, name)
		assert.NotNil(t, cs.LastTerminationState.Terminated, name)
	}
	cs := containerStatus(t, st, "init")
	assert.Equal(t, int32(1), cs.RestartCount)
	assert.Equal(t, int32(0), cs.State.Terminated.ExitCode)
}

// The exit that resets the pod may come while the container's crash
// back-off from an earlier restart lasts: the reset goes ahead at once and
// every container counts the restart.
func TestSyncPodRestartAllContainersDuringBackOff(t *testing.T) {
	h := newHarness(t)
	src := ctr("src", appV1)
	src.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	src.RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	pod := newPod("reset-backoff", src, ctr("app", appV1))
	h.mustSync(pod)
	h.exit(pod, "src", 1)
	h.mustSync(pod) // restarted at once; the next restart would wait 10s
	h.exit(pod, "src", 42)
	h.mustSync(pod)
	require.Len(t, h.instances(pod, "src"), 1)
	assert.Equal(t, running, h.latest(pod, "src").State)
	st := h.podStatus(pod)
	assert.Equal(t, int32(2), containerStatus(t, st, "src").RestartCount)
	assert.Equal(t, int32(1), containerStatus(t, st, "app").RestartCount)
	for _, name := range []string{"src", "app"} {
		cs := containerStatus(t, st, name)
		assert.NotNil(t, cs.State.Running, name)
		require.NotNil(t, cs.LastTerminationState.Terminated, name)
		assert.Equal(t, "RestartingAllContainers", cs.LastTerminationState.Terminated.Reason, name)
	}
}

// fakeUserNamespaces hands every pod the same range, as userns.Manager's
// contract says (the same range on every call until Release), and records
// releases.
type fakeUserNamespaces struct {
	mu       sync.Mutex
	calls    []string // "<pod> <handler>"
	released []types.UID
}

func (f *fakeUserNamespaces) PodUserNamespace(_ context.Context, pod *v1.Pod, handler string, supported bool) (*runtimeapi.UserNamespace, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, pod.Name+" "+handler)
	if !supported {
		return nil, fmt.Errorf("can't set `spec.hostUsers: false`, RuntimeClass handler %q does not support user namespaces", handler)
	}
	m := []*runtimeapi.IDMapping{{HostId: 65536 * 2, ContainerId: 0, Length: 65536}}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: m, Gids: m}, nil
}

func (f *fakeUserNamespaces) Release(_ context.Context, uid types.UID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, uid)
	return nil
}

// A pod with hostUsers: false runs in the user namespace the manager
// gives it: the sandbox and every container with the same one, their
// mounts idmapped; the range is released once the pod is gone. Other pods
// keep the host's.
func TestSyncPodUserNamespaces(t *testing.T) {
	uns := &fakeUserNamespaces{}
	h := newHarness(t, func(cfg *podsyncer.Config, _ *harness) {
		cfg.UserNamespaces = uns
		cfg.UserNamespacesSupported = func(handler string) bool { return handler == "" }
	})
	pod := newPod("userns", ctr("app", appV1))
	pod.Spec.HostUsers = ptr.To(false)
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	h.mustSync(pod)

	sbs := h.calls.sandboxConfigs()
	require.Len(t, sbs, 1)
	ns := sbs[0].Linux.SecurityContext.NamespaceOptions.UsernsOptions
	require.NotNil(t, ns)
	assert.Equal(t, runtimeapi.NamespaceMode_POD, ns.Mode)
	cfg := h.calls.containerConfig("app")
	assert.Equal(t, ns.String(), cfg.Linux.SecurityContext.NamespaceOptions.UsernsOptions.String(), "the container shares the sandbox's")
	require.NotEmpty(t, cfg.Mounts)
	for _, m := range cfg.Mounts {
		require.Len(t, m.UidMappings, 1, m.ContainerPath)
		assert.Equal(t, uint32(65536*2), m.UidMappings[0].HostId)
		assert.Equal(t, m.UidMappings[0].String(), m.GidMappings[0].String())
	}
	assert.Equal(t, running, h.latest(pod, "app").State)

	plain := newPod("hostusers", ctr("app", appV1))
	h.mustSync(plain)
	assert.Nil(t, h.calls.sandboxConfigs()[1].Linux.SecurityContext.NamespaceOptions.UsernsOptions, "the host's")
	uns.mu.Lock()
	assert.Equal(t, []string{"userns ", "userns "}, uns.calls, "asked for the sandbox and the container, never for other pods")
	uns.mu.Unlock()

	require.NoError(t, h.terminate(pod, 0, nil))
	require.NoError(t, h.s.SyncTerminatedPod(h.ctx, pod))
	uns.mu.Lock()
	defer uns.mu.Unlock()
	assert.Equal(t, []types.UID{pod.UID}, uns.released)
}

// The kubelet's start counters: pods, user-namespaced pods (with an error
// when anything of the sync that created the sandbox fails), containers by
// type and failed starts by the kubelet's reason.
func TestSyncPodStartMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	h := newHarness(t, func(cfg *podsyncer.Config, h *harness) {
		cfg.Registerer = reg
		cfg.UserNamespaces = &fakeUserNamespaces{}
		cfg.UserNamespacesSupported = func(string) bool { return true }
		h.sim.Inject("CreateContainer", crisim.Fault{Err: grpcstatus.Error(codes.Internal, "disk full"), Times: 1})
	})
	pod := newPod("counted", ctr("app", appV1))
	pod.Spec.InitContainers = []v1.Container{ctr("init", initImg)}
	pod.Spec.HostUsers = ptr.To(false)
	_, err := h.sync(pod)
	require.ErrorContains(t, err, "disk full")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubelet_started_containers_errors_total [ALPHA] Cumulative number of errors when starting containers
# TYPE kubelet_started_containers_errors_total counter
kubelet_started_containers_errors_total{code="CreateContainerError",container_type="init_container"} 1
# HELP kubelet_started_containers_total [ALPHA] Cumulative number of containers started
# TYPE kubelet_started_containers_total counter
kubelet_started_containers_total{container_type="init_container"} 1
# HELP kubelet_started_pods_errors_total [ALPHA] Cumulative number of errors when starting pods
# TYPE kubelet_started_pods_errors_total counter
kubelet_started_pods_errors_total 0
# HELP kubelet_started_pods_total [ALPHA] Cumulative number of pods started
# TYPE kubelet_started_pods_total counter
kubelet_started_pods_total 1
# HELP kubelet_started_user_namespaced_pods_errors_total [ALPHA] Cumulative number of errors when starting pods with user namespaces. This metric will only be collected on Linux.
# TYPE kubelet_started_user_namespaced_pods_errors_total counter
kubelet_started_user_namespaced_pods_errors_total 1
# HELP kubelet_started_user_namespaced_pods_total [ALPHA] Cumulative number of pods with user namespaces started. This metric will only be collected on Linux.
# TYPE kubelet_started_user_namespaced_pods_total counter
kubelet_started_user_namespaced_pods_total 1
`), "kubelet_started_containers_errors_total", "kubelet_started_containers_total", "kubelet_started_pods_errors_total",
		"kubelet_started_pods_total", "kubelet_started_user_namespaced_pods_errors_total", "kubelet_started_user_namespaced_pods_total"))
	h.mustSync(pod)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubelet_started_user_namespaced_pods_total [ALPHA] Cumulative number of pods with user namespaces started. This metric will only be collected on Linux.
# TYPE kubelet_started_user_namespaced_pods_total counter
kubelet_started_user_namespaced_pods_total 1
`), "kubelet_started_user_namespaced_pods_total"), "the next sync creates no sandbox: nothing more counted")

	_, err = podsyncer.New(h.cfg)
	assert.Error(t, err, "registering twice on one registry is an error, not a panic")
}

// kubelet_pod_start_duration_seconds, as the kubelet records it: the time
// since the pod's config.seen annotation at its first status and again
// when it goes from Pending to Running; not for a pod without the
// annotation, and not on later syncs.
func TestSyncPodStartDuration(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	h := newHarness(t, func(cfg *podsyncer.Config, _ *harness) { cfg.Registerer = reg })
	seen := h.clk.Now()
	pod := newPod("timed", ctr("app", appV1))
	pod.Spec.InitContainers = []v1.Container{ctr("init", initImg)}
	pod.Annotations = map[string]string{kubetypes.ConfigFirstSeenAnnotationKey: seen.Format(time.RFC3339Nano)}
	unseen := newPod("unseen", ctr("app", appV1))

	h.clk.Step(1500 * time.Millisecond)
	h.mustSync(pod) // first status: Pending, init container started
	h.mustSync(unseen)
	require.Equal(t, v1.PodPending, h.podStatus(pod).Phase)
	h.exit(pod, "init", 0)
	h.clk.Step(5 * time.Second)
	h.mustSync(pod) // the app starts: Running
	require.Equal(t, v1.PodRunning, h.podStatus(pod).Phase)
	h.clk.Step(time.Minute)
	h.mustSync(pod) // Running again: not observed

	var b strings.Builder
	b.WriteString(`
# HELP kubelet_pod_start_duration_seconds [ALPHA] Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run
# TYPE kubelet_pod_start_duration_seconds histogram
`)
	for _, le := range []string{"0.5", "1", "2", "3", "4", "5", "6", "8", "10", "20", "30", "45", "60", "120", "180", "240",
		"300", "360", "480", "600", "900", "1200", "1800", "2700", "3600", "+Inf"} {
		n := 2
		switch le {
		case "0.5", "1":
			n = 0
		case "2", "3", "4", "5", "6":
			n = 1
		}
		fmt.Fprintf(&b, "kubelet_pod_start_duration_seconds_bucket{le=%q} %d\n", le, n)
	}
	b.WriteString("kubelet_pod_start_duration_seconds_sum 8\nkubelet_pod_start_duration_seconds_count 2\n")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(b.String()), "kubelet_pod_start_duration_seconds"))
}
