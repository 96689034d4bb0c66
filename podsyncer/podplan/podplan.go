package podplan

import (
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/kubetypes"
)

// State is a container instance's runtime state.
type State int

// The runtime states of a container instance.
const (
	Created State = iota + 1
	Running
	Exited
	Unknown
)

// Container is the newest instance of one container in the pod's current
// sandbox, with the prober's view of it.
type Container struct {
	// ID is the runtime's container ID.
	ID    string
	State State
	// ExitCode of an Exited instance.
	ExitCode int32
	// Hash is the spec hash the instance was created with.
	Hash string
	// Started: the instance runs and its startup probe (if any) passed.
	Started bool
	// LivenessFailed and StartupFailed report failed probes of a running
	// instance.
	LivenessFailed, StartupFailed bool
	// ResizeRestart: the instance runs with resources an in-place resize
	// changed whose resize policy is RestartContainer.
	ResizeRestart bool
}

// Input is everything Compute looks at.
type Input struct {
	Pod *v1.Pod
	// Sandboxes is how many sandboxes the pod has had; SandboxReady tells
	// whether the newest is ready.
	Sandboxes    int
	SandboxReady bool
	// Containers holds the newest instance per container name in the
	// newest sandbox: init, app and ephemeral containers.
	Containers map[string]Container
	// Earlier holds, per container name and newest first, the instances
	// older than the one in Containers (this sandbox's, then earlier
	// sandboxes'). A RestartAllContainers reset removes them too; an app
	// or ephemeral container with no instance in the newest sandbox is
	// judged by its newest earlier one (so a new sandbox does not re-run
	// a container that finished for good, nor an ephemeral container).
	Earlier map[string][]Container
	// Hash returns the spec hash of a container, compared with
	// Container.Hash to restart containers whose spec changed. Nil
	// disables the comparison.
	Hash func(*v1.Container) string
}

// Kind tells the role of a container in its pod.
type Kind int

// The kinds of containers.
const (
	Init Kind = iota + 1
	Sidecar
	App
	Ephemeral
)

// Start is a container to start.
type Start struct {
	Container *v1.Container
	Kind      Kind
	// Restart: an earlier instance exists; the crash back-off applies.
	Restart bool
}

// Kill is a running container to stop before the Plan's starts.
type Kill struct {
	Name, ID string
	Kind     Kind
	// Reason is the kubelet's wording, e.g. "failed liveness probe".
	Reason string
}

// Reset is a container instance a RestartAllContainers reset removes.
type Reset struct {
	Name, ID string
	Kind     Kind
	// Kill: the instance has not exited; it is stopped without a grace
	// period (and without its preStop hook) before it is removed.
	Kill bool
}

// Plan is what to do, in order: kill the pod's sandbox and containers
// (KillPod), create a sandbox, reset the pod, kill single containers,
// start containers.
type Plan struct {
	// KillPod: stop every container and the sandbox first.
	KillPod bool
	// CreateSandbox with attempt Attempt (the number of earlier ones).
	// Such a Plan starts nothing: the caller computes the next Plan once
	// the new sandbox is ready, with the earlier sandboxes' instances in
	// Input.Earlier, and that Plan starts the containers.
	CreateSandbox bool
	Attempt       uint32
	// Reset: a container exited with a code its RestartAllContainers
	// rule matches. Every instance of every init and regular container
	// is removed, in this order (regular containers, then init
	// containers; the instances that triggered the reset last); the
	// next Plan then starts the pod over from its first init container.
	// A Plan with a Reset has nothing else.
	Reset []Reset
	Kill  []Kill
	Start []Start
	// Done: the pod has finished for good (restart policy not Always);
	// Failed tells its phase is Failed rather than Succeeded. A Done Plan
	// kills and starts nothing (KillPod tells that its sandbox is gone);
	// the caller terminates what still runs.
	Done, Failed bool
	// Initialized: every init container finished and every sidecar
	// started, now or earlier.
	Initialized bool
}

// Acts reports whether carrying out the Plan changes the runtime: a pod
// whose Plan does not act is as the runtime last reported it, so there is
// nothing new to read back after it.
func (p Plan) Acts() bool {
	return p.KillPod || p.CreateSandbox || len(p.Reset) > 0 || len(p.Kill) > 0 || len(p.Start) > 0
}

// Compute returns the Plan for in.
func Compute(in Input) Plan {
	if !in.SandboxReady {
		return sandboxPlan(in)
	}
	if reset := resetActions(in); len(reset) > 0 {
		return Plan{Reset: reset}
	}
	var p Plan
	ephemeralActions(in, &p)
	p.Initialized = initActions(in, &p)
	if p.Done || !p.Initialized {
		return p
	}
	appActions(in, &p)
	return p
}

// finish marks the pod done: nothing more is killed or started in it,
// sidecars included.
func (p *Plan) finish(failed bool) {
	p.Done, p.Failed = true, failed
	p.Kill, p.Start = nil, nil
}

// newest returns the newest instance of the named container: the newest
// sandbox's (inSandbox), else the newest one an earlier sandbox holds.
func newest(in Input, name string) (st Container, inSandbox, ok bool) {
	if st, ok := in.Containers[name]; ok {
		return st, true, true
	}
	if earlier := in.Earlier[name]; len(earlier) > 0 {
		return earlier[0], false, true
	}
	return Container{}, false, false
}

// exitedForGood: the instance exited and the container's restart rules
// and policy (falling back to the pod's) do not start it again.
func exitedForGood(c *v1.Container, spec *v1.PodSpec, st Container) bool {
	return st.State == Exited && !kubetypes.ContainerShouldRestart(c, spec, st.ExitCode)
}

// restartsAfterKill tells whether a container stopped while it had not
// exited (a failed probe, an unknown state) is started again: its own
// restart policy says, else the pod's; restart rules are not consulted,
// as there is no exit code to match (the kubelet's rule).
func restartsAfterKill(c *v1.Container, spec *v1.PodSpec) bool {
	if c.RestartPolicy != nil {
		return *c.RestartPolicy != v1.ContainerRestartPolicyNever
	}
	return spec.RestartPolicy != v1.RestartPolicyNever
}

// sandboxPlan: no ready sandbox. The pod's sandbox and containers are
// killed and a new sandbox created (its containers start on the next
// pass), unless the pod already ran containers and nothing of it would
// run again: restartPolicy Never, or every app container exited for good
// (an OnFailure pod whose containers all succeeded). Then it is done.
func sandboxPlan(in Input) Plan {
	p := Plan{KillPod: in.Sandboxes > 0, CreateSandbox: true, Attempt: uint32(in.Sandboxes)}
	if in.Sandboxes == 0 {
		return p
	}
	ran := len(in.Containers) > 0 || len(in.Earlier) > 0
	if in.Pod.Spec.RestartPolicy == v1.RestartPolicyNever && ran {
		p.CreateSandbox, p.Done, p.Failed = false, true, !allSucceeded(in)
		return p
	}
	if finished, failed := appsExitedForGood(in); finished {
		p.CreateSandbox, p.Done, p.Failed = false, true, failed
	}
	return p
}

func allSucceeded(in Input) bool {
	for i := range in.Pod.Spec.Containers {
		st, _, ok := newest(in, in.Pod.Spec.Containers[i].Name)
		if !ok || st.State != Exited || st.ExitCode != 0 {
			return false
		}
	}
	return true
}

// appsExitedForGood reports whether every app container exited for good,
// in this sandbox or an earlier one, and whether one of them failed.
func appsExitedForGood(in Input) (finished, failed bool) {
	spec := &in.Pod.Spec
	for i := range spec.Containers {
		c := &spec.Containers[i]
		st, _, ok := newest(in, c.Name)
		if !ok || !exitedForGood(c, spec, st) {
			return false, false
		}
		failed = failed || st.ExitCode != 0
	}
	return len(spec.Containers) > 0, failed
}

// resetActions is the RestartAllContainers reset of the pod when the
// newest instance of one of its init or regular containers exited with a
// code a RestartAllContainers rule of that container matches; nil
// otherwise. Ephemeral containers are left as they are.
func resetActions(in Input) []Reset {
	spec := &in.Pod.Spec
	triggered := false
	for _, list := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			st, ok := in.Containers[list[i].Name]
			triggered = triggered || ok && st.State == Exited && kubetypes.RestartsAllContainers(&list[i], st.ExitCode)
		}
	}
	if !triggered {
		return nil
	}
	var targets, sources []Reset
	add := func(list []v1.Container, kind func(*v1.Container) Kind) (tgt, src []Reset) {
		for i := range list {
			c := &list[i]
			instances := in.Earlier[c.Name]
			if st, ok := in.Containers[c.Name]; ok {
				instances = append([]Container{st}, instances...)
			}
			for _, st := range instances {
				r := Reset{Name: c.Name, ID: st.ID, Kind: kind(c), Kill: st.State != Exited}
				if st.State == Exited && kubetypes.RestartsAllContainers(c, st.ExitCode) {
					src = append(src, r)
				} else {
					tgt = append(tgt, r)
				}
			}
		}
		return tgt, src
	}
	appTargets, appSources := add(spec.Containers, func(*v1.Container) Kind { return App })
	initTargets, initSources := add(spec.InitContainers, initKind)
	targets = append(appTargets, initTargets...)
	sources = append(appSources, initSources...)
	return append(targets, sources...)
}

// ephemeralActions starts the ephemeral containers that never ran, in
// this sandbox or an earlier one; they are never restarted, and may start
// before initialization is done.
func ephemeralActions(in Input, p *Plan) {
	for i := range in.Pod.Spec.EphemeralContainers {
		c := (*v1.Container)(&in.Pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		if _, _, ok := newest(in, c.Name); !ok {
			p.Start = append(p.Start, Start{Container: c, Kind: Ephemeral})
		}
	}
}

// appActions adds the app containers' starts and kills, and decides
// whether the pod is done: every app container exited for good (each
// container's restart rules and policy decide, falling back to the
// pod's). A running container killed without restart keeps the pod
// going until it has exited.
func appActions(in Input, p *Plan) {
	spec := &in.Pod.Spec
	finished, failed := true, false
	for i := range spec.Containers {
		c := &spec.Containers[i]
		st, inSandbox, ok := newest(in, c.Name)
		switch {
		case ok && exitedForGood(c, spec, st):
			failed = failed || st.ExitCode != 0
			continue
		case !ok:
			p.Start = append(p.Start, Start{Container: c, Kind: App})
		case st.State == Unknown:
			// It may still run, in this sandbox or an earlier one: killed
			// before a new instance starts, whatever the restart policy
			// (the kubelet's rule).
			p.Kill = append(p.Kill, Kill{Name: c.Name, ID: st.ID, Kind: App, Reason: ReasonUnknown})
			p.Start = append(p.Start, Start{Container: c, Kind: App, Restart: true})
		case !inSandbox || st.State == Exited || st.State == Created:
			// An earlier sandbox's instance, an exit to restart, or an
			// instance whose start failed: a new instance.
			p.Start = append(p.Start, Start{Container: c, Kind: App, Restart: true})
		default:
			runningApp(in, p, c, st)
		}
		finished = false
	}
	if finished {
		p.finish(failed)
	}
}

// runningApp kills a running app container whose spec changed, whose
// probe failed or whose resize needs a restart, and starts it again if
// the reason or its restart policy says so.
func runningApp(in Input, p *Plan, c *v1.Container, st Container) {
	reason := restartReason(in, c, st)
	if reason == "" {
		return
	}
	p.Kill = append(p.Kill, Kill{Name: c.Name, ID: st.ID, Kind: App, Reason: reason})
	if reason == ReasonChanged || reason == ReasonResize || restartsAfterKill(c, &in.Pod.Spec) {
		p.Start = append(p.Start, Start{Container: c, Kind: App, Restart: true})
	}
}

// The kubelet's reasons for killing a running container (Kill.Reason).
const (
	ReasonChanged  = "definition changed"
	ReasonLiveness = "failed liveness probe"
	ReasonStartup  = "failed startup probe"
	// ReasonResize: an in-place resize of a resource whose resize policy
	// is RestartContainer (restarted whatever the pod's restart policy).
	ReasonResize = "resize requires restart"
	// ReasonUnknown: the runtime reports the container in an unknown
	// state; it is killed before a new instance starts, so that two
	// instances never run.
	ReasonUnknown = "is in unknown state"
)

// restartReason is why a running container must be killed, in the
// kubelet's order of checks; "" when it keeps running.
func restartReason(in Input, c *v1.Container, st Container) string {
	switch {
	case in.Hash != nil && st.Hash != "" && st.Hash != in.Hash(c):
		return ReasonChanged
	case st.LivenessFailed:
		return ReasonLiveness
	case st.StartupFailed:
		return ReasonStartup
	case st.ResizeRestart:
		return ReasonResize
	}
	return ""
}
