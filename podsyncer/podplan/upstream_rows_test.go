package podplan

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// The rows of the kubelet's own tables for computePodActions
// (k8s.io/kubernetes v1.36.3, pkg/kubelet/kuberuntime/
// kuberuntime_manager_test.go: TestComputePodActions,
// TestComputePodActionsWithInitContainers,
// TestComputePodActionsWithRestartableInitContainers and
// TestComputePodActionsWithInitAndEphemeralContainers), each under its
// upstream name, expressed through Compute. Upstream's podActions read as
// a Plan thus:
//
//   - KillPod with CreateSandbox: "killpod" (only when a sandbox existed:
//     a new pod has nothing to kill) and "sandbox attempt N"; the starts
//     upstream lists with them are those of the next Plan, computed once
//     the new sandbox is ready with the old instances in Earlier (next).
//   - KillPod alone: the pod is done ("done", "done failed"), with
//     "killpod" when its sandbox is gone.
//   - InitContainersToStart, ContainersToStart, EphemeralContainersToStart:
//     "start <name>", init containers before app containers.
//   - ContainersToKill: "kill <name> (<reason>)".

// upstreamRow is one upstream row over its table's base pod and state.
type upstreamRow struct {
	policy v1.RestartPolicy
	// editPod and edit change the table's base pod and the instances of
	// its newest sandbox.
	editPod func(*v1.Pod)
	edit    func(map[string]Container)
	// gone: the newest sandbox is not ready (dead, or without an IP).
	gone bool
	// attempt is the newest sandbox's attempt; noSandbox: there is none.
	attempt   int
	noSandbox bool
	want      []string
	// next is what the Plan in the new sandbox does, when want creates
	// one.
	next []string
}

// imageHash stands for the spec hash: the rows change a spec's image.
func imageHash(c *v1.Container) string { return c.Image }

func upstreamPod(inits []v1.Container) *v1.Pod {
	pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: inits}}
	for _, name := range []string{"foo1", "foo2", "foo3"} {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: name, Image: "busybox"})
	}
	return pod
}

func runningIn(id, image string) Container {
	return Container{ID: id, State: Running, Started: true, Hash: image}
}

// baseApps is makeBasePodAndStatus: three app containers running.
func baseApps() (*v1.Pod, map[string]Container) {
	return upstreamPod(nil), map[string]Container{
		"foo1": runningIn("id1", "busybox"), "foo2": runningIn("id2", "busybox"), "foo3": runningIn("id3", "busybox"),
	}
}

// baseInits is makeBasePodAndStatusWithInitContainers: three init
// containers, all succeeded; no app container yet.
func baseInits() (*v1.Pod, map[string]Container) {
	pod := upstreamPod([]v1.Container{{Name: "init1", Image: "bar-image", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("400m"), v1.ResourceMemory: resource.MustParse("400Mi")},
	}}, {Name: "init2", Image: "bar-image"}, {Name: "init3", Image: "bar-image"}})
	state := map[string]Container{}
	for i, name := range []string{"init1", "init2", "init3"} {
		state[name] = Container{ID: fmt.Sprintf("initid%d", i+1), State: Exited, Hash: "bar-image"}
	}
	return pod, state
}

// baseSidecars is makeBasePodAndStatusWithRestartableInitContainers:
// three sidecars running and started (the second and third with liveness
// and startup probes that passed); no app container yet.
func baseSidecars() (*v1.Pod, map[string]Container) {
	always := ptr.To(v1.ContainerRestartPolicyAlways)
	probed := func(name string) v1.Container {
		return v1.Container{Name: name, Image: "bar-image", RestartPolicy: always, LivenessProbe: &v1.Probe{}, StartupProbe: &v1.Probe{}}
	}
	pod := upstreamPod([]v1.Container{{Name: "restartable-init-1", Image: "bar-image", RestartPolicy: always},
		probed("restartable-init-2"), probed("restartable-init-3")})
	state := map[string]Container{}
	for i := 1; i <= 3; i++ {
		state[fmt.Sprintf("restartable-init-%d", i)] = runningIn(fmt.Sprintf("initid%d", i), "bar-image")
	}
	return pod, state
}

// baseEphemeral is makeBasePodAndStatusWithInitAndEphemeralContainers:
// an init container that succeeded, the app containers and an ephemeral
// container running.
func baseEphemeral() (*v1.Pod, map[string]Container) {
	pod, state := baseApps()
	pod.Spec.InitContainers = []v1.Container{{Name: "init1", Image: "bar-image"}}
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
	state["init1"] = Container{ID: "initid1", State: Exited, Hash: "bar-image"}
	state["debug"] = runningIn("debug1", "busybox")
	return pod, state
}

// renderRow renders a Plan as the rows expect it.
func renderRow(p Plan) []string {
	var out []string
	if p.KillPod {
		out = append(out, "killpod")
	}
	if p.CreateSandbox {
		out = append(out, fmt.Sprintf("sandbox attempt %d", p.Attempt))
	}
	for _, k := range p.Kill {
		out = append(out, "kill "+k.Name+" ("+k.Reason+")")
	}
	for _, s := range p.Start {
		out = append(out, "start "+s.Container.Name)
	}
	switch {
	case p.Done && p.Failed:
		out = append(out, "done failed")
	case p.Done:
		out = append(out, "done")
	}
	return out
}

// kindIn is the Kind of the named container in pod's spec.
func kindIn(pod *v1.Pod, name string) Kind {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return initKind(&pod.Spec.InitContainers[i])
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return App
		}
	}
	return Ephemeral
}

// afterKillPod is the old sandbox's instances as Earlier holds them once
// KillPod stopped them: running ones exited, SIGKILLed.
func afterKillPod(state map[string]Container) map[string][]Container {
	out := map[string][]Container{}
	for name, st := range state {
		if st.State == Running {
			st.State, st.ExitCode = Exited, 137
		}
		out[name] = []Container{st}
	}
	return out
}

func computeRow(t *testing.T, in Input) []string {
	t.Helper()
	p := Compute(in)
	for _, s := range p.Start {
		require.Equal(t, kindIn(in.Pod, s.Container.Name), s.Kind, "kind of %s", s.Container.Name)
	}
	return renderRow(p)
}

func runUpstreamRows(t *testing.T, base func() (*v1.Pod, map[string]Container), rows map[string]upstreamRow) {
	for name, row := range rows {
		t.Run(name, func(t *testing.T) {
			pod, state := base()
			pod.Spec.RestartPolicy = row.policy
			if row.editPod != nil {
				row.editPod(pod)
			}
			if row.edit != nil {
				row.edit(state)
			}
			in := Input{Pod: pod, Sandboxes: row.attempt + 1, SandboxReady: !row.gone, Containers: state, Hash: imageHash}
			if row.noSandbox {
				in.Sandboxes, in.SandboxReady = 0, false
			}
			require.Equal(t, row.want, computeRow(t, in))
			if !Compute(in).CreateSandbox {
				require.Nil(t, row.next, "no sandbox is created")
				return
			}
			next := Input{Pod: pod, Sandboxes: in.Sandboxes + 1, SandboxReady: true, Containers: map[string]Container{},
				Earlier: afterKillPod(state), Hash: imageHash}
			require.Equal(t, row.next, computeRow(t, next), "in the new sandbox")
		})
	}
}

// Row edits.
func clearAll(state map[string]Container) { clear(state) }

func keepOnly(names ...string) func(map[string]Container) {
	return func(state map[string]Container) {
		kept := map[string]Container{}
		for _, n := range names {
			kept[n] = state[n]
		}
		clear(state)
		for n, st := range kept {
			state[n] = st
		}
	}
}

func setState(name string, s State, code int32) func(map[string]Container) {
	return func(state map[string]Container) {
		st := state[name]
		st.State, st.ExitCode = s, code
		state[name] = st
	}
}

func edits(fs ...func(map[string]Container)) func(map[string]Container) {
	return func(state map[string]Container) {
		for _, f := range fs {
			f(state)
		}
	}
}

const (
	always    = v1.RestartPolicyAlways
	onFailure = v1.RestartPolicyOnFailure
	never     = v1.RestartPolicyNever
)

var allApps = []string{"start foo1", "start foo2", "start foo3"}

func TestComputePodActions(t *testing.T) {
	allExited := func(state map[string]Container) {
		for _, n := range []string{"foo1", "foo2", "foo3"} {
			setState(n, Exited, 0)(state)
		}
	}
	runUpstreamRows(t, baseApps, map[string]upstreamRow{
		"everything is good; do nothing": {},
		"start pod sandbox and all containers for a new pod": {
			noSandbox: true, gone: true, edit: clearAll, want: []string{"sandbox attempt 0"}, next: allApps,
		},
		"restart exited containers if RestartPolicy == Always": {
			policy: always, edit: edits(setState("foo1", Exited, 0), setState("foo2", Exited, 111)),
			want: []string{"start foo1", "start foo2"},
		},
		"restart failed containers if RestartPolicy == OnFailure": {
			policy: onFailure, edit: edits(setState("foo1", Exited, 0), setState("foo2", Exited, 111)),
			want: []string{"start foo2"},
		},
		"restart created but not started containers if RestartPolicy == OnFailure": {
			policy: onFailure, edit: edits(setState("foo1", Exited, 0), setState("foo2", Created, 0)),
			want: []string{"start foo2"},
		},
		"don't restart containers if RestartPolicy == Never": {
			policy: never, edit: edits(setState("foo1", Exited, 0), setState("foo2", Exited, 111)),
		},
		"Kill pod and recreate everything if the pod sandbox is dead, and RestartPolicy == Always": {
			policy: always, gone: true, want: []string{"killpod", "sandbox attempt 1"}, next: allApps,
		},
		"Kill pod and recreate all containers (except for the succeeded one) if the pod sandbox is dead, and RestartPolicy == OnFailure": {
			policy: onFailure, gone: true, edit: setState("foo2", Exited, 0),
			want: []string{"killpod", "sandbox attempt 1"}, next: []string{"start foo1", "start foo3"},
		},
		"Kill pod and recreate all containers if the PodSandbox does not have an IP": {
			gone: true, want: []string{"killpod", "sandbox attempt 1"}, next: allApps,
		},
		"Kill and recreate the container if the container's spec changed": {
			policy: always, edit: func(s map[string]Container) { st := s["foo2"]; st.Hash = "432423432"; s["foo2"] = st },
			want: []string{"kill foo2 (definition changed)", "start foo2"},
		},
		"Kill and recreate the container if the liveness check has failed": {
			policy: always, edit: func(s map[string]Container) { st := s["foo2"]; st.LivenessFailed = true; s["foo2"] = st },
			want: []string{"kill foo2 (failed liveness probe)", "start foo2"},
		},
		"Kill and recreate the container if the startup check has failed": {
			policy: always, edit: func(s map[string]Container) { st := s["foo2"]; st.StartupFailed = true; s["foo2"] = st },
			want: []string{"kill foo2 (failed startup probe)", "start foo2"},
		},
		"Verify we do not create a pod sandbox if no ready sandbox for pod with RestartPolicy=Never and all containers exited": {
			policy: never, gone: true, attempt: 1, edit: allExited, want: []string{"killpod", "done"},
		},
		"Verify we do not create a pod sandbox if no ready sandbox for pod with RestartPolicy=OnFailure and all containers succeeded": {
			policy: onFailure, gone: true, attempt: 1, edit: allExited, want: []string{"killpod", "done"},
		},
		"Verify we create a pod sandbox if no ready sandbox for pod with RestartPolicy=Never and no containers have ever been created": {
			policy: never, gone: true, attempt: 2, edit: clearAll, want: []string{"killpod", "sandbox attempt 3"}, next: allApps,
		},
		"Kill and recreate the container if the container is in unknown state": {
			policy: never, edit: setState("foo2", Unknown, 0), want: []string{"kill foo2 (is in unknown state)", "start foo2"},
		},
		"Restart the container if the container is in created state": {
			policy: never, edit: setState("foo2", Created, 0), want: []string{"start foo2"},
		},
	})
}

func TestComputePodActionsWithInitContainers(t *testing.T) {
	resize := func(pod *v1.Pod) {
		pod.Spec.InitContainers[0].Resources.Requests = v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("800m"), v1.ResourceMemory: resource.MustParse("800Mi")}
	}
	runUpstreamRows(t, baseInits, map[string]upstreamRow{
		"initialization completed; start all containers": {want: allApps},
		"no init containers have been started; start the first one": {
			edit: clearAll, want: []string{"start init1"},
		},
		"initialization in progress; do nothing": {policy: always, edit: setState("init3", Running, 0)},
		"Kill pod and restart the first init container if the pod sandbox is dead": {
			policy: always, gone: true, want: []string{"killpod", "sandbox attempt 1"}, next: []string{"start init1"},
		},
		"initialization failed; restart the last init container if RestartPolicy == Always": {
			policy: always, edit: setState("init3", Exited, 137), want: []string{"start init3"},
		},
		"initialization failed; restart the last init container if RestartPolicy == OnFailure": {
			policy: onFailure, edit: setState("init3", Exited, 137), want: []string{"start init3"},
		},
		"initialization failed; kill pod if RestartPolicy == Never": {
			policy: never, edit: setState("init3", Exited, 137), want: []string{"done failed"},
		},
		"init container state unknown; kill and recreate the last init container if RestartPolicy == Always": {
			policy: always, edit: setState("init3", Unknown, 0), want: []string{"kill init3 (is in unknown state)", "start init3"},
		},
		"init container state unknown; kill and recreate the last init container if RestartPolicy == OnFailure": {
			policy: onFailure, edit: setState("init3", Unknown, 0), want: []string{"kill init3 (is in unknown state)", "start init3"},
		},
		"init container state unknown; kill pod if RestartPolicy == Never": {
			policy: never, edit: setState("init3", Unknown, 0), want: []string{"done failed"},
		},
		"Pod sandbox not ready, init container failed, but RestartPolicy == Never; kill pod only": {
			policy: never, gone: true, want: []string{"killpod", "done failed"},
		},
		"Pod sandbox not ready, and RestartPolicy == Never, but no visible init containers;  create a new pod sandbox": {
			policy: never, gone: true, edit: clearAll, want: []string{"killpod", "sandbox attempt 1"}, next: []string{"start init1"},
		},
		"Pod sandbox not ready, init container failed, and RestartPolicy == OnFailure; create a new pod sandbox": {
			policy: onFailure, gone: true, edit: setState("init3", Exited, 137),
			want: []string{"killpod", "sandbox attempt 1"}, next: []string{"start init1"},
		},
		"some of the init container statuses are missing but the last init container is running, don't restart preceding ones": {
			policy: always, edit: edits(setState("init3", Running, 0), keepOnly("init3")),
		},
		"an init container is in the created state due to an unknown error when starting container; restart it": {
			policy: always, edit: setState("init3", Created, 0), want: []string{"start init3"},
		},
		"resize request exists on a not yet running non-sidecar init container; start it": {
			editPod: resize, edit: clearAll, want: []string{"start init1"},
		},
		// The resource update itself is the caller's (Input has no
		// resources); the Plan starts and kills nothing.
		"resize of a running non-sidecar init container": {
			editPod: resize, edit: edits(keepOnly("init1"), setState("init1", Running, 0)),
		},
		"resize of a running non-sidecar init container with FG disabled": {
			editPod: resize, edit: edits(keepOnly("init1"), setState("init1", Running, 0)),
		},
	})
}

func TestComputePodActionsWithRestartableInitContainers(t *testing.T) {
	const s1, s2, s3 = "restartable-init-1", "restartable-init-2", "restartable-init-3"
	update := func(name string, f func(*Container)) func(map[string]Container) {
		return func(state map[string]Container) { st := state[name]; f(&st); state[name] = st }
	}
	notStarted := update(s2, func(st *Container) { st.Started = false })
	appsIn := func(s State, code int32) func(map[string]Container) {
		return func(state map[string]Container) {
			for i := 1; i <= 3; i++ {
				state[fmt.Sprintf("foo%d", i)] = Container{ID: fmt.Sprintf("id%d", i), State: s, ExitCode: code, Started: s == Running, Hash: "busybox"}
			}
		}
	}
	startS1 := []string{"start " + s1}
	runUpstreamRows(t, baseSidecars, map[string]upstreamRow{
		"initialization completed; start all containers": {want: allApps},
		"no init containers have been started; start the first one": {
			edit: clearAll, want: startS1,
		},
		"an init container is stuck in the created state; restart it": {
			policy: always, edit: setState(s3, Created, 0), want: []string{"start " + s3},
		},
		"restartable init container has started; start the next": {
			policy: always, edit: keepOnly(s1), want: []string{"start " + s2},
		},
		"livenessProbe has not been run; start the nothing": {
			policy: always, edit: keepOnly(s1, s2), want: []string{"start " + s3},
		},
		"livenessProbe in progress; start the next": {
			policy: always, edit: keepOnly(s1, s2), want: []string{"start " + s3},
		},
		"livenessProbe has completed; start the next": {
			policy: always, edit: keepOnly(s1, s2), want: []string{"start " + s3},
		},
		"kill and recreate the restartable init container if the liveness check has failed": {
			policy: always, edit: update(s3, func(st *Container) { st.LivenessFailed = true }),
			want: append([]string{"kill " + s3 + " (failed liveness probe)", "start " + s3}, allApps...),
		},
		"startupProbe has not been run; do nothing": {
			policy: always, edit: edits(keepOnly(s1, s2), notStarted),
		},
		"startupProbe in progress; do nothing": {
			policy: always, edit: edits(keepOnly(s1, s2), notStarted),
		},
		"startupProbe has completed; start the next": {
			policy: always, edit: keepOnly(s1, s2), want: []string{"start " + s3},
		},
		"kill and recreate the restartable init container if the startup check has failed": {
			policy: always, editPod: func(pod *v1.Pod) { pod.Spec.InitContainers[2].StartupProbe = &v1.Probe{} },
			edit: update(s3, func(st *Container) { st.Started, st.StartupFailed = false, true }),
			want: []string{"kill " + s3 + " (failed startup probe)", "start " + s3},
		},
		"kill and recreate the restartable init container if the container definition changes": {
			policy: always, editPod: func(pod *v1.Pod) { pod.Spec.InitContainers[2].Image = "foo-image" },
			want: append([]string{"kill " + s3 + " (definition changed)", "start " + s3}, allApps...),
		},
		"restart terminated restartable init container and next init container": {
			policy: always, edit: edits(setState(s1, Exited, 0), setState(s3, Exited, 0)),
			want: []string{"start " + s1, "start " + s3},
		},
		"restart terminated restartable init container and regular containers": {
			policy: always, edit: setState(s1, Exited, 0), want: append(startS1, allApps...),
		},
		"Pod sandbox not ready, restartable init container failed, but RestartPolicy == Never; kill pod only": {
			policy: never, gone: true, edit: setState(s3, Exited, 137), want: []string{"killpod", "done failed"},
		},
		"Pod sandbox not ready, and RestartPolicy == Never, but no visible restartable init containers;  create a new pod sandbox": {
			policy: never, gone: true, edit: clearAll, want: []string{"killpod", "sandbox attempt 1"}, next: startS1,
		},
		"Pod sandbox not ready, restartable init container failed, and RestartPolicy == OnFailure; create a new pod sandbox": {
			policy: onFailure, gone: true, edit: setState(s3, Exited, 137), want: []string{"killpod", "sandbox attempt 1"}, next: startS1,
		},
		"Pod sandbox not ready, restartable init container failed, and RestartPolicy == Always; create a new pod sandbox": {
			policy: always, gone: true, edit: setState(s3, Exited, 137), want: []string{"killpod", "sandbox attempt 1"}, next: startS1,
		},
		"initialization failed; restart the last restartable init container even if pod's RestartPolicy == Never": {
			policy: never, edit: setState(s3, Exited, 137), want: []string{"start " + s3},
		},
		"restartable init container state unknown; kill and recreate the last restartable init container even if pod's RestartPolicy == Never": {
			policy: never, edit: setState(s3, Unknown, 0), want: []string{"kill " + s3 + " (is in unknown state)", "start " + s3},
		},
		"restart restartable init container if regular containers are running even if pod's RestartPolicy == Never": {
			policy: never, edit: edits(setState(s3, Exited, 137), appsIn(Running, 0)), want: []string{"start " + s3},
		},
		"kill the pod if all main containers succeeded if pod's RestartPolicy == Never": {
			policy: never, edit: appsIn(Exited, 0), want: []string{"done"},
		},
		"some of the init container statuses are missing but the last init container is running, restart restartable init and regular containers": {
			policy: always, edit: keepOnly(s3), want: append([]string{"start " + s1, "start " + s2}, allApps...),
		},
	})
}

func TestComputePodActionsWithInitAndEphemeralContainers(t *testing.T) {
	without := func(names ...string) func(map[string]Container) {
		return func(state map[string]Container) {
			for _, n := range names {
				delete(state, n)
			}
		}
	}
	runUpstreamRows(t, baseEphemeral, map[string]upstreamRow{
		"steady state; do nothing; ignore ephemeral container": {},
		"No ephemeral containers running; start one": {
			edit: without("debug"), want: []string{"start debug"},
		},
		"Start second ephemeral container": {
			editPod: func(pod *v1.Pod) {
				pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers,
					v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug2", Image: "busybox"}})
			},
			want: []string{"start debug2"},
		},
		"Ephemeral container exited; do not restart": {
			policy: always, edit: setState("debug", Exited, 0),
		},
		"initialization in progress; start ephemeral container": {
			edit: edits(setState("init1", Running, 0), without("debug")), want: []string{"start debug"},
		},
		"Create a new pod sandbox if the pod sandbox is dead, init container failed and RestartPolicy == OnFailure": {
			policy: onFailure, gone: true, edit: edits(without("foo1", "foo2", "foo3"), setState("init1", Exited, 137)),
			want: []string{"killpod", "sandbox attempt 1"}, next: []string{"start init1"},
		},
		"Kill pod and do not restart ephemeral container if the pod sandbox is dead": {
			policy: always, gone: true, want: []string{"killpod", "sandbox attempt 1"}, next: []string{"start init1"},
		},
		"Kill pod if all containers exited except ephemeral container": {
			policy: never, edit: edits(setState("foo1", Exited, 0), setState("foo2", Exited, 0), setState("foo3", Exited, 0)),
			want: []string{"done"},
		},
		"Ephemeral container is in unknown state; leave it alone": {
			policy: never, edit: setState("debug", Unknown, 0),
		},
	})
}
