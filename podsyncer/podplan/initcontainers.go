package podplan

import (
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/kubetypes"
)

// initKind is the Kind of an init container: Sidecar or Init.
func initKind(c *v1.Container) Kind {
	if kubetypes.IsSidecar(c) {
		return Sidecar
	}
	return Init
}

// initActions adds what the init containers need and returns whether the
// pod is initialized. As the kubelet does, it walks them from the last one
// back: the last init container with an instance tells how far
// initialization got, as finished init containers may have been removed
// since. Those before it ran already; of them only sidecars are kept
// running (started again when exited or gone). The pod is initialized
// once the last init container succeeded, or started if a sidecar, or
// when an app container exists in this sandbox. An init container that
// failed with no restart left fails the pod.
func initActions(in Input, p *Plan) bool {
	inits := in.Pod.Spec.InitContainers
	w := initWalk{in: in, initialized: appsSeen(in)}
	if len(inits) == 0 {
		return true
	}
	w.after = w.initialized
	for i := len(inits) - 1; i >= 0; i-- {
		if !w.step(i) {
			p.finish(true)
			return false
		}
	}
	if !w.after {
		w.start(0, false) // none ran yet
	}
	// The walk went backwards; the kubelet starts them in spec order.
	slices.Reverse(w.kills)
	slices.Reverse(w.starts)
	p.Kill = append(p.Kill, w.kills...)
	p.Start = append(p.Start, w.starts...)
	return w.initialized
}

// appsSeen: an app container has an instance in this sandbox, so the
// pod's initialization finished in it.
func appsSeen(in Input) bool {
	for i := range in.Pod.Spec.Containers {
		if _, ok := in.Containers[in.Pod.Spec.Containers[i].Name]; ok {
			return true
		}
	}
	return false
}

// initWalk is the state of initActions' walk.
type initWalk struct {
	in Input
	// after: an init container after the current one has an instance
	// (or the pod is initialized), so the current one ran already.
	after       bool
	initialized bool
	// kills and starts, in the walk's (reverse) order.
	kills  []Kill
	starts []Start
}

func (w *initWalk) start(i int, restart bool) {
	c := &w.in.Pod.Spec.InitContainers[i]
	w.starts = append(w.starts, Start{Container: c, Kind: initKind(c), Restart: restart})
}

// restart kills init container i's instance st for reason and starts a
// new one.
func (w *initWalk) restart(i int, st Container, reason string) {
	c := &w.in.Pod.Spec.InitContainers[i]
	w.kills = append(w.kills, Kill{Name: c.Name, ID: st.ID, Kind: initKind(c), Reason: reason})
	w.start(i, true)
}

// finished: init container i succeeded (a sidecar: started). The pod is
// initialized if it is the last; otherwise the next one starts, unless
// it ran already.
func (w *initWalk) finished(i int) {
	if i == len(w.in.Pod.Spec.InitContainers)-1 {
		w.initialized = true
	} else if !w.after {
		w.start(i+1, false)
	}
}

// step handles init container i; false when its failure fails the pod.
func (w *initWalk) step(i int) bool {
	c := &w.in.Pod.Spec.InitContainers[i]
	st, ok := w.in.Containers[c.Name]
	sidecar := kubetypes.IsSidecar(c)
	switch {
	case !ok:
		if w.after && sidecar {
			w.start(i, false) // a sidecar gone since: started again
		}
		return true
	case w.after && !sidecar:
		return true // ran already: never run again in this sandbox
	case sidecar:
		w.sidecar(i, st)
	case !w.regular(i, c, st):
		return false
	}
	w.after = true
	return true
}

// sidecar handles a sidecar's instance: restarted whenever it is not
// running, whatever the pod's restart policy.
func (w *initWalk) sidecar(i int, st Container) {
	switch st.State {
	case Running:
		w.runningSidecar(i, st)
	case Unknown:
		w.restart(i, st, ReasonUnknown)
	default: // exited, or Created: its start failed
		w.start(i, true)
	}
}

// runningSidecar: until its startup probe passed the init containers
// after it wait (and the pod is not initialized); one whose startup probe
// failed is restarted. Once started, it is restarted when its spec
// changed, its liveness probe failed or a resize needs it.
func (w *initWalk) runningSidecar(i int, st Container) {
	if !st.Started {
		if st.StartupFailed {
			w.restart(i, st, ReasonStartup)
		}
		return
	}
	w.finished(i)
	if reason := restartReason(w.in, &w.in.Pod.Spec.InitContainers[i], st); reason != "" {
		w.restart(i, st, reason)
	}
}

// regular handles a regular init container's instance; false when it
// failed and may not restart.
func (w *initWalk) regular(i int, c *v1.Container, st Container) bool {
	spec := &w.in.Pod.Spec
	switch {
	case st.State == Created:
		// Its start failed: a new instance, whatever the restart policy
		// (the kubelet's rule).
		w.start(i, true)
	case st.State == Running:
		if st.ResizeRestart {
			w.restart(i, st, ReasonResize)
		} // otherwise wait for it
	case st.State == Exited && st.ExitCode == 0:
		w.finished(i)
	case st.State == Exited:
		if !kubetypes.ContainerShouldRestart(c, spec, st.ExitCode) {
			return false
		}
		w.start(i, true)
	default: // unknown: counted as failed, killed before it restarts
		if !restartsAfterKill(c, spec) {
			return false
		}
		w.restart(i, st, ReasonUnknown)
	}
	return true
}
