package podplan

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func testPod(policy v1.RestartPolicy, inits []v1.Container, apps ...string) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: policy, InitContainers: inits}}
	for _, a := range apps {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: a})
	}
	return p
}

func initC(name string) v1.Container { return v1.Container{Name: name} }

// withPolicy sets the restart policy of the pod's first app container.
func withPolicy(p *v1.Pod, policy v1.ContainerRestartPolicy) *v1.Pod {
	p.Spec.Containers[0].RestartPolicy = &policy
	return p
}

// withRule gives the first app container restartPolicy Never and one rule:
// Restart on the exit codes (op).
func withRule(p *v1.Pod, op v1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) *v1.Pod {
	withPolicy(p, v1.ContainerRestartPolicyNever)
	p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}}
	return p
}
func sidecar(name string, startupProbe bool) v1.Container {
	c := v1.Container{Name: name, RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}
	if startupProbe {
		c.StartupProbe = &v1.Probe{}
	}
	return c
}

func running(id string) Container { return Container{ID: id, State: Running, Started: true} }
func exited(id string, code int32) Container {
	return Container{ID: id, State: Exited, ExitCode: code}
}

// summary renders a plan as short strings for table comparison.
func summary(p Plan) []string {
	var out []string
	if p.KillPod {
		out = append(out, "killpod")
	}
	if p.CreateSandbox {
		out = append(out, "sandbox")
	}
	for _, k := range p.Kill {
		out = append(out, "kill "+k.Name+" ("+k.Reason+")")
	}
	for _, s := range p.Start {
		v := "start "
		if s.Restart {
			v = "restart "
		}
		out = append(out, v+s.Container.Name)
	}
	switch {
	case p.Done && p.Failed:
		out = append(out, "done failed")
	case p.Done:
		out = append(out, "done")
	}
	return out
}

func TestCompute(t *testing.T) {
	always, onFailure, never := v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever
	for name, tc := range map[string]struct {
		pod         *v1.Pod
		sandboxes   int
		notReady    bool
		containers  map[string]Container
		want        []string
		initialized bool
	}{
		"new pod: sandbox first": {
			pod: testPod(always, nil, "a"), notReady: true, want: []string{"sandbox"},
		},
		"sandbox died: kill and recreate": {
			pod: testPod(always, nil, "a"), sandboxes: 1, notReady: true, containers: map[string]Container{"a": running("1")},
			want: []string{"killpod", "sandbox"},
		},
		"sandbox died, Never, containers ran: finished": {
			pod: testPod(never, nil, "a"), sandboxes: 1, notReady: true, containers: map[string]Container{"a": exited("1", 0)},
			want: []string{"killpod", "done"},
		},
		"apps start together": {
			pod: testPod(always, nil, "a", "b"), sandboxes: 1,
			want: []string{"start a", "start b"}, initialized: true,
		},
		"first init container only": {
			pod: testPod(always, []v1.Container{initC("i1"), initC("i2")}, "a"), sandboxes: 1,
			want: []string{"start i1"},
		},
		"init running: wait": {
			pod: testPod(always, []v1.Container{initC("i1"), initC("i2")}, "a"), sandboxes: 1,
			containers: map[string]Container{"i1": running("1")},
		},
		"init done: next": {
			pod: testPod(always, []v1.Container{initC("i1"), initC("i2")}, "a"), sandboxes: 1,
			containers: map[string]Container{"i1": exited("1", 0)}, want: []string{"start i2"},
		},
		"inits done: apps": {
			pod: testPod(always, []v1.Container{initC("i1")}, "a"), sandboxes: 1,
			containers: map[string]Container{"i1": exited("1", 0)}, want: []string{"start a"}, initialized: true,
		},
		"init failed, OnFailure: restart it": {
			pod: testPod(onFailure, []v1.Container{initC("i1")}, "a"), sandboxes: 1,
			containers: map[string]Container{"i1": exited("1", 1)}, want: []string{"restart i1"},
		},
		"init failed, Never: pod failed": {
			pod: testPod(never, []v1.Container{initC("i1")}, "a"), sandboxes: 1,
			containers: map[string]Container{"i1": exited("1", 1)}, want: []string{"done failed"},
		},
		"sidecar starts, next waits until it started": {
			pod: testPod(always, []v1.Container{sidecar("s", true), initC("i1")}, "a"), sandboxes: 1,
			want: []string{"start s"},
		},
		"sidecar running, startup probe pending: wait": {
			pod: testPod(always, []v1.Container{sidecar("s", true), initC("i1")}, "a"), sandboxes: 1,
			containers: map[string]Container{"s": {ID: "1", State: Running}},
		},
		"sidecar started: the next init runs beside it": {
			pod: testPod(always, []v1.Container{sidecar("s", false), initC("i1")}, "a"), sandboxes: 1,
			containers: map[string]Container{"s": running("1")}, want: []string{"start i1"},
		},
		"sidecar and init done: apps, sidecar keeps running": {
			pod: testPod(never, []v1.Container{sidecar("s", false), initC("i1")}, "a"), sandboxes: 1,
			containers: map[string]Container{"s": running("1"), "i1": exited("2", 0)}, want: []string{"start a"}, initialized: true,
		},
		"sidecar exited: restarted whatever the pod's policy": {
			pod: testPod(never, []v1.Container{sidecar("s", false)}, "a"), sandboxes: 1,
			containers: map[string]Container{"s": exited("1", 0), "a": running("2")}, want: []string{"restart s"}, initialized: true,
		},
		"sidecar liveness failed: killed and restarted": {
			pod: testPod(never, []v1.Container{sidecar("s", false)}, "a"), sandboxes: 1,
			containers: map[string]Container{"s": {ID: "1", State: Running, Started: true, LivenessFailed: true}, "a": running("2")},
			want:       []string{"kill s (failed liveness probe)", "restart s"}, initialized: true,
		},
		"apps finished, sidecar running: pod done": {
			pod: testPod(never, []v1.Container{sidecar("s", false)}, "a"), sandboxes: 1,
			containers: map[string]Container{"s": running("1"), "a": exited("2", 0)}, want: []string{"done"}, initialized: true,
		},
		"apps finished while sidecar exited: no restart, done": {
			pod: testPod(onFailure, []v1.Container{sidecar("s", false)}, "a"), sandboxes: 1,
			containers: map[string]Container{"s": exited("1", 137), "a": exited("2", 0)}, want: []string{"done"}, initialized: true,
		},
		"Always: exited app restarts": {
			pod: testPod(always, nil, "a"), sandboxes: 1, containers: map[string]Container{"a": exited("1", 0)},
			want: []string{"restart a"}, initialized: true,
		},
		"OnFailure: success is final, failure restarts": {
			pod: testPod(onFailure, nil, "a", "b"), sandboxes: 1, containers: map[string]Container{"a": exited("1", 0), "b": exited("2", 3)},
			want: []string{"restart b"}, initialized: true,
		},
		"Never: one failed": {
			pod: testPod(never, nil, "a", "b"), sandboxes: 1, containers: map[string]Container{"a": exited("1", 0), "b": exited("2", 3)},
			want: []string{"done failed"}, initialized: true,
		},
		"Never: liveness failure kills without restart": {
			pod: testPod(never, nil, "a"), sandboxes: 1, containers: map[string]Container{"a": {ID: "1", State: Running, LivenessFailed: true}},
			want: []string{"kill a (failed liveness probe)"}, initialized: true,
		},
		"Never: a resize that needs a restart restarts anyway": {
			pod: testPod(never, nil, "a"), sandboxes: 1, containers: map[string]Container{"a": {ID: "1", State: Running, Started: true, ResizeRestart: true}},
			want: []string{"kill a (resize requires restart)", "restart a"}, initialized: true,
		},
		"Never: a container whose start failed gets a new instance": {
			pod: testPod(never, nil, "a", "b"), sandboxes: 1, containers: map[string]Container{"a": {ID: "1", State: Created}, "b": running("2")},
			want: []string{"restart a"}, initialized: true,
		},
		"an init container whose start failed gets a new instance": {
			pod: testPod(never, []v1.Container{initC("i")}, "a"), sandboxes: 1, containers: map[string]Container{"i": {ID: "1", State: Created}},
			want: []string{"restart i"},
		},
		"a sidecar whose start failed gets a new instance": {
			pod: testPod(always, []v1.Container{sidecar("s", false)}, "a"), sandboxes: 1, containers: map[string]Container{"s": {ID: "1", State: Created}},
			want: []string{"restart s"},
		},
		"startup probe failure restarts": {
			pod: testPod(always, nil, "a"), sandboxes: 1, containers: map[string]Container{"a": {ID: "1", State: Running, StartupFailed: true}},
			want: []string{"kill a (failed startup probe)", "restart a"}, initialized: true,
		},
		"spec changed: restart even with Never": {
			pod: testPod(never, nil, "a"), sandboxes: 1, containers: map[string]Container{"a": {ID: "1", State: Running, Hash: "old"}},
			want: []string{"kill a (definition changed)", "restart a"}, initialized: true,
		},
		"container restartPolicy Always in a Never pod: restarted": {
			pod: withPolicy(testPod(never, nil, "a"), v1.ContainerRestartPolicyAlways), sandboxes: 1,
			containers: map[string]Container{"a": exited("1", 0)}, want: []string{"restart a"}, initialized: true,
		},
		"container restartPolicy Never in an Always pod: final": {
			pod: withPolicy(testPod(always, nil, "a"), v1.ContainerRestartPolicyNever), sandboxes: 1,
			containers: map[string]Container{"a": exited("1", 2)}, want: []string{"done failed"}, initialized: true,
		},
		"container restartPolicy Never, liveness failure: killed, not restarted": {
			pod: withPolicy(testPod(always, nil, "a"), v1.ContainerRestartPolicyNever), sandboxes: 1,
			containers: map[string]Container{"a": {ID: "1", State: Running, LivenessFailed: true}},
			want:       []string{"kill a (failed liveness probe)"}, initialized: true,
		},
		"restart rule matches the exit code: restarted despite Never": {
			pod: withRule(testPod(never, nil, "a"), v1.ContainerRestartRuleOnExitCodesOpIn, 42), sandboxes: 1,
			containers: map[string]Container{"a": exited("1", 42)}, want: []string{"restart a"}, initialized: true,
		},
		"restart rule does not match: the container's policy decides": {
			pod: withRule(testPod(never, nil, "a"), v1.ContainerRestartRuleOnExitCodesOpIn, 42), sandboxes: 1,
			containers: map[string]Container{"a": exited("1", 1)}, want: []string{"done failed"}, initialized: true,
		},
		"initialized earlier: a removed init container is not rerun": {
			pod: testPod(always, []v1.Container{initC("i1")}, "a"), sandboxes: 1, containers: map[string]Container{"a": running("2")},
			initialized: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			in := Input{Pod: tc.pod, Sandboxes: tc.sandboxes, SandboxReady: !tc.notReady && tc.sandboxes > 0, Containers: tc.containers,
				Hash: func(*v1.Container) string { return "new" }}
			if in.Containers == nil {
				in.Containers = map[string]Container{}
			}
			p := Compute(in)
			assert.Equal(t, tc.want, summary(p))
			acts := slices.ContainsFunc(tc.want, func(s string) bool { return !strings.HasPrefix(s, "done") })
			assert.Equal(t, acts, p.Acts(), "acts: the runtime changes")
			if !tc.notReady {
				assert.Equal(t, tc.initialized, p.Initialized, "initialized")
			}
		})
	}
}

func TestEphemeralStartedOnce(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, "a")
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}}
	in := Input{Pod: pod, Sandboxes: 1, SandboxReady: true, Containers: map[string]Container{"a": running("1")}}
	assert.Equal(t, []string{"start debug"}, summary(Compute(in)))
	assert.Equal(t, Ephemeral, Compute(in).Start[0].Kind)
	in.Containers["debug"] = exited("2", 1)
	assert.Empty(t, summary(Compute(in)), "never restarted")
}

func TestResetAllContainers(t *testing.T) {
	restartAll := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	never := ptr.To(v1.ContainerRestartPolicyNever)
	pod := testPod(v1.RestartPolicyNever, []v1.Container{initC("init"), sidecar("side", false)}, "src", "app")
	pod.Spec.Containers[0].RestartPolicy, pod.Spec.Containers[0].RestartPolicyRules = never, restartAll
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}}
	in := Input{Pod: pod, Sandboxes: 1, SandboxReady: true, Containers: map[string]Container{
		"init": exited("i1", 0), "side": running("s1"), "src": exited("c2", 42), "app": running("a1"), "debug": running("d1"),
	}, Earlier: map[string][]Container{"src": {exited("c1", 1)}}}
	p := Compute(in)
	var got []string
	for _, r := range p.Reset {
		got = append(got, r.Name+"/"+r.ID+map[bool]string{true: " kill", false: ""}[r.Kill])
	}
	// Regular targets, init targets, then the sources; ephemeral untouched.
	assert.Equal(t, []string{"src/c1", "app/a1 kill", "init/i1", "side/s1 kill", "src/c2"}, got)
	assert.Empty(t, p.Start)
	assert.Empty(t, p.Kill)
	assert.True(t, p.Acts())
	assert.Equal(t, Sidecar, p.Reset[3].Kind)

	// Another exit code: the container's own policy (Never) decides.
	in.Containers["src"] = exited("c2", 1)
	assert.Empty(t, Compute(in).Reset)

	// After the reset the pod starts over from its first init container.
	in.Containers, in.Earlier = map[string]Container{"debug": running("d1")}, nil
	assert.Equal(t, []string{"start init"}, summary(Compute(in)))

	// A sidecar's exit triggers it as well.
	pod.Spec.InitContainers[1].RestartPolicyRules = restartAll
	in.Containers = map[string]Container{"init": exited("i1", 0), "side": exited("s1", 42), "src": running("c1"), "app": running("a1")}
	p = Compute(in)
	assert.Len(t, p.Reset, 4)
	assert.Equal(t, "side", p.Reset[3].Name)
}

// An app or ephemeral container with no instance in the newest sandbox is
// judged by its newest instance in an earlier one.
func TestEarlierSandboxes(t *testing.T) {
	onFailure := v1.RestartPolicyOnFailure
	debug := []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}}
	for name, tc := range map[string]struct {
		pod        *v1.Pod
		ready      bool
		containers map[string]Container
		earlier    map[string][]Container
		want       []string
	}{
		"new sandbox, inits done: the app that succeeded is not run again": {
			pod: testPod(onFailure, []v1.Container{initC("i")}, "a", "b"), ready: true,
			containers: map[string]Container{"i": exited("3", 0)},
			earlier:    map[string][]Container{"i": {exited("1", 0)}, "a": {exited("2", 0)}, "b": {exited("4", 1), exited("5", 0)}},
			want:       []string{"restart b"},
		},
		"new sandbox: one app succeeded here, the other in the old sandbox: done": {
			pod: testPod(onFailure, nil, "a", "b"), ready: true,
			containers: map[string]Container{"b": exited("6", 0)},
			earlier:    map[string][]Container{"a": {exited("2", 0)}, "b": {exited("4", 1)}},
			want:       []string{"done"},
		},
		"new sandbox: an ephemeral container that ran before is not started": {
			pod: func() *v1.Pod { p := testPod(onFailure, nil, "a"); p.Spec.EphemeralContainers = debug; return p }(), ready: true,
			containers: map[string]Container{"a": running("3")},
			earlier:    map[string][]Container{"debug": {exited("2", 0)}},
		},
		"sandbox gone, every app succeeded in an earlier one: done, no sandbox": {
			pod: testPod(onFailure, nil, "a"), earlier: map[string][]Container{"a": {exited("2", 0)}},
			want: []string{"killpod", "done"},
		},
		"sandbox gone, container restartPolicy Never failed: done, no sandbox": {
			pod:        withPolicy(testPod(v1.RestartPolicyAlways, nil, "a"), v1.ContainerRestartPolicyNever),
			containers: map[string]Container{"a": exited("2", 1)},
			want:       []string{"killpod", "done failed"},
		},
		"sandbox gone, one app still to run: a new sandbox": {
			pod: testPod(onFailure, nil, "a", "b"), containers: map[string]Container{"a": exited("2", 0), "b": running("3")},
			want: []string{"killpod", "sandbox"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			in := Input{Pod: tc.pod, Sandboxes: 2, SandboxReady: tc.ready, Containers: tc.containers, Earlier: tc.earlier}
			if in.Containers == nil {
				in.Containers = map[string]Container{}
			}
			require.Equal(t, tc.want, summary(Compute(in)))
		})
	}
}
