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
	// Earlier holds, per container name, the instances older than the
	// one in Containers (this sandbox's and earlier sandboxes'), which a
	// RestartAllContainers reset removes too.
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
	// Failed tells its phase is Failed rather than Succeeded.
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
	pod := in.Pod
	if !in.SandboxReady {
		return sandboxPlan(in)
	}
	if reset := resetActions(in); len(reset) > 0 {
		return Plan{Reset: reset}
	}
	var p Plan
	for i := range pod.Spec.EphemeralContainers {
		c := (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		if _, ok := in.Containers[c.Name]; !ok {
			p.Start = append(p.Start, Start{Container: c, Kind: Ephemeral})
		}
	}
	appsSeen := false
	for i := range pod.Spec.Containers {
		if _, ok := in.Containers[pod.Spec.Containers[i].Name]; ok {
			appsSeen = true
		}
	}
	p.Initialized = initActions(in, &p, appsSeen)
	if p.Done {
		return p
	}
	if !p.Initialized && !appsSeen {
		return p
	}
	appActions(in, &p)
	return p
}

// sandboxPlan: no ready sandbox. A pod that never restarts and already
// ran containers in a sandbox now gone is finished; otherwise a new
// sandbox is created (its containers start on the next pass).
func sandboxPlan(in Input) Plan {
	p := Plan{KillPod: in.Sandboxes > 0, CreateSandbox: true, Attempt: uint32(in.Sandboxes)}
	if in.Sandboxes > 0 && in.Pod.Spec.RestartPolicy == v1.RestartPolicyNever && len(in.Containers) > 0 {
		p.CreateSandbox, p.Done = false, true
		p.Failed = !allSucceeded(in)
	}
	return p
}

func allSucceeded(in Input) bool {
	for i := range in.Pod.Spec.Containers {
		c, ok := in.Containers[in.Pod.Spec.Containers[i].Name]
		if !ok || c.State != Exited || c.ExitCode != 0 {
			return false
		}
	}
	return true
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
	initTargets, initSources := add(spec.InitContainers, func(c *v1.Container) Kind {
		if kubetypes.IsSidecar(c) {
			return Sidecar
		}
		return Init
	})
	targets = append(appTargets, initTargets...)
	sources = append(appSources, initSources...)
	return append(targets, sources...)
}

// initActions walks the init containers in order and adds what they need;
// it returns whether initialization is complete.
func initActions(in Input, p *Plan, appsSeen bool) bool {
	pod := in.Pod
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		st, ok := in.Containers[c.Name]
		if kubetypes.IsSidecar(c) {
			switch {
			case !ok:
				p.Start = append(p.Start, Start{Container: c, Kind: Sidecar})
				if !appsSeen {
					return false // the next one waits until this one started
				}
			case st.State == Running:
				if reason := restartReason(in, c, st); reason != "" {
					p.Kill = append(p.Kill, Kill{Name: c.Name, ID: st.ID, Kind: Sidecar, Reason: reason})
					p.Start = append(p.Start, Start{Container: c, Kind: Sidecar, Restart: true})
				} else if !st.Started && !appsSeen {
					return false
				}
			case st.State == Exited || st.State == Created:
				// Created: its start failed; a new instance replaces it.
				p.Start = append(p.Start, Start{Container: c, Kind: Sidecar, Restart: true})
				if !appsSeen {
					return false
				}
			default: // unknown: wait for the runtime
				if !appsSeen {
					return false
				}
			}
			continue
		}
		switch {
		case appsSeen && (!ok || st.State == Exited):
			// Initialized earlier (app containers exist): an init container
			// is never run again in the same sandbox.
			continue
		case !ok:
			p.Start = append(p.Start, Start{Container: c, Kind: Init})
			return false
		case st.State == Created:
			// Its start failed: a new instance, whatever the restart policy
			// (the kubelet's rule).
			p.Start = append(p.Start, Start{Container: c, Kind: Init, Restart: true})
			return false
		case st.State == Exited && st.ExitCode == 0:
			continue
		case st.State == Exited && !kubetypes.ContainerShouldRestart(c, &pod.Spec, st.ExitCode):
			p.Done, p.Failed = true, true
			return false
		case st.State == Exited:
			p.Start = append(p.Start, Start{Container: c, Kind: Init, Restart: true})
			return false
		default:
			return false // running: wait for it
		}
	}
	return true
}

// appActions adds the app containers' starts and kills, and decides
// whether the pod is done.
func appActions(in Input, p *Plan) {
	pod := in.Pod
	// Done once every container exited for good: each container's restart
	// rules and policy decide, falling back to the pod's.
	finished := true
	failed := false
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		st, ok := in.Containers[c.Name]
		switch {
		case !ok:
			p.Start = append(p.Start, Start{Container: c, Kind: App})
			finished = false
		case st.State == Running:
			finished = false
			reason := restartReason(in, c, st)
			if reason == "" {
				continue
			}
			p.Kill = append(p.Kill, Kill{Name: c.Name, ID: st.ID, Kind: App, Reason: reason})
			// A killed container exits as SIGKILLed (137).
			if reason == ReasonChanged || reason == ReasonResize || kubetypes.ContainerShouldRestart(c, &pod.Spec, 137) {
				p.Start = append(p.Start, Start{Container: c, Kind: App, Restart: true})
			}
		case st.State == Created:
			p.Start = append(p.Start, Start{Container: c, Kind: App, Restart: true})
			finished = false
		case st.State == Exited:
			if kubetypes.ContainerShouldRestart(c, &pod.Spec, st.ExitCode) {
				p.Start = append(p.Start, Start{Container: c, Kind: App, Restart: true})
				finished = false
			} else if st.ExitCode != 0 {
				failed = true
			}
		default:
			finished = false
		}
	}
	if finished {
		p.Done, p.Failed = true, failed
		p.Start = nil // nothing more starts in a finished pod, sidecars included
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
)

func restartReason(in Input, c *v1.Container, st Container) string {
	switch {
	case in.Hash != nil && st.Hash != "" && st.Hash != in.Hash(c):
		return ReasonChanged
	case st.ResizeRestart:
		return ReasonResize
	case st.LivenessFailed:
		return ReasonLiveness
	case st.StartupFailed:
		return ReasonStartup
	}
	return ""
}
