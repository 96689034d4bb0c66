package podworkers

import (
	"context"
	"math"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podState is everything the workers remember about one pod UID. All fields
// are guarded by Workers.mu. An idle pod holds only this struct (with its
// place in the work queue) and its last update; with Config.LookupPod, only
// this struct (128 bytes) and its place: no goroutine, no channel, no
// timer.
type podState struct {
	uid types.UID

	// pending is the latest update not yet seen by a worker; a newer update
	// replaces it (the termination request itself lives in the fields
	// below, so it is never lost).
	pending *Update
	// active accumulates what the workers have acted on (pod, mirror pod,
	// runtime pod); it is replayed by resyncs and phase transitions. It is
	// set (hasActive) once the pod starts; the pointer is nil while it
	// holds nothing (a released pod with neither mirror nor runtime pod),
	// so an idle pod of a LookupPod host pays no allocation for it.
	active *acted
	// relName and relNamespace (with relGrace, the pod's termination grace
	// period if relGraceSet) are what the workers keep of a pod they
	// dropped while released is set (Config.LookupPod; active.pod is then
	// nil): what they need of it when the host no longer has it. Kept in
	// the record, not a stub of its own: the strings are the dropped
	// pod's, and the record stays in the 128-byte size class.
	relName, relNamespace string
	// kill holds what kill requests left for the termination (status
	// func, completion channels); nil for a pod nobody killed.
	kill *killState
	// cancel stops the sync in flight, if any.
	cancel context.CancelFunc

	// lastSync is when the previous sync returned (the status barrier
	// waits for status newer than this); due is when the pod's next resync
	// or retry is due, if hasDue. Both are stamps on Workers.epoch: 8
	// bytes each where a time.Time takes 24, and a pod's due time lives
	// here rather than in a map of its own.
	lastSync, due stamp
	// graceSeconds (with graceSet) is the grace period in force (grace).
	graceSeconds int64
	// relGrace: see relName. (A pod whose grace period does not fit in 32
	// bits is never dropped.)
	relGrace int32

	// working is true while a goroutine owns the pod or it sits in the
	// runnable queue; at most one owner exists at a time. queued is true
	// while the pod sits in the runnable queue.
	working, queued bool
	// hasDue: due is set (the pod is in the work queue). hasActive:
	// active is set, of type activeType.
	hasDue, hasActive bool
	activeType        uint8 // an UpdateType (UpdatePod admits only its four values)
	graceSet          bool
	// hasStarted: the pod's first sync began; terminating: termination
	// was requested; hasTerminated: its containers are stopped. (Flags,
	// not times: a worker per pod, 10,000 of them on a virtual node
	// agent, is 64 bytes smaller.)
	hasStarted         bool
	terminating        bool
	hasTerminated      bool
	startedTerminating bool
	deleted            bool
	evicted            bool
	finished           bool
	restartRequested   bool
	observedRuntime    bool
	released           bool // the pod was dropped (implies hasActive): see relName
	releasedStatic     bool // the pod released is static
	relGraceSet        bool
}

// killState is what kill requests leave for a pod's termination.
type killState struct {
	statusFn  StatusFunc
	completed []chan<- struct{}
}

// statusFn returns the status func of the kill in force, if any.
func (s *podState) statusFn() StatusFunc {
	if s.kill == nil {
		return nil
	}
	return s.kill.statusFn
}

// stamp is a time as an offset from an epoch (Workers.epoch), zero for
// none: a non-negative offset d is stored as d+1.
type stamp int64

// stampAt returns the stamp of t on epoch.
func stampAt(epoch, t time.Time) stamp {
	d := t.Sub(epoch)
	if d < 0 || d == math.MaxInt64 { // (Sub saturates: d+1 would overflow)
		return stamp(d)
	}
	return stamp(d + 1)
}

// time returns the stamp's time on epoch, the zero Time for none.
func (s stamp) time(epoch time.Time) time.Time {
	switch {
	case s == 0:
		return time.Time{}
	case s > 0:
		return epoch.Add(time.Duration(s - 1))
	default:
		return epoch.Add(time.Duration(s))
	}
}

func (s *podState) terminationRequested() bool { return s.terminating }
func (s *podState) terminated() bool           { return s.hasTerminated }
func (s *podState) started() bool              { return s.hasStarted }

// state is the lifecycle state reported to callers.
func (s *podState) state() State {
	switch {
	case s.finished:
		return StateFinished
	case s.terminated():
		return StateTerminated
	case s.terminationRequested():
		return StateTerminating
	default:
		return StateSyncing
	}
}

// closeCompleted closes every kill's Completed channel.
func (s *podState) closeCompleted() {
	if s.kill == nil {
		return
	}
	for _, ch := range s.kill.completed {
		close(ch)
	}
	s.kill.completed = nil
}

// endKill closes every kill's Completed channel and drops the status func.
func (s *podState) endKill() {
	s.closeCompleted()
	s.kill = nil
}

// acted is what the workers have acted on of a pod: an Update's pod,
// mirror pod and runtime pod (its type is podState.activeType).
type acted struct {
	pod     *v1.Pod
	mirror  *v1.Pod
	running *RuntimePod
	// start is the StartTime of the update acted on (none if it had
	// none), which a phase transition's replay carries on, as upstream's
	// active update does, for the pod worker duration metric.
	start stamp
}

// activePod returns the pod the workers keep, nil if none (not started,
// or dropped).
func (s *podState) activePod() *v1.Pod {
	if s.active == nil {
		return nil
	}
	return s.active.pod
}

// replay returns a replay of what was acted on, as an update of type t.
func (s *podState) replay(t UpdateType) *Update {
	u := &Update{Type: t}
	if a := s.active; a != nil {
		u.Pod, u.MirrorPod, u.RunningPod = a.pod, a.mirror, a.running
	}
	return u
}

// grace returns the grace period in force.
func (s *podState) grace() gracePeriod { return gracePeriod{seconds: s.graceSeconds, set: s.graceSet} }

// setGrace sets the grace period in force.
func (s *podState) setGrace(g gracePeriod) { s.graceSeconds, s.graceSet = g.seconds, g.set }

// merge records what a worker is about to act on. The pod is kept unless
// only a runtime pod arrives and a pod is already known; the mirror pod is
// kept when the update has none. Kill options are not kept: their effect
// lives in the grace period, status func and flags of the state.
func (s *podState) merge(u *Update) {
	s.hasActive = true
	if s.active == nil {
		s.active = &acted{}
	}
	a := s.active
	s.activeType = uint8(u.Type)
	if a.pod == nil || u.RunningPod == nil {
		a.pod = u.Pod
	}
	if a.pod != nil {
		s.unrelease()
	}
	a.running = u.RunningPod
	if u.MirrorPod != nil {
		a.mirror = u.MirrorPod
	}
}

// setPod makes p the pod the workers keep. Called with mu held.
func (s *podState) setPod(p *v1.Pod) {
	if s.active == nil {
		s.active = &acted{}
	}
	s.active.pod = p
	s.unrelease()
}

// unrelease forgets what was kept of a dropped pod.
func (s *podState) unrelease() {
	s.released, s.releasedStatic, s.relGraceSet = false, false, false
	s.relName, s.relNamespace, s.relGrace = "", "", 0
}

// release drops the pod of an idle worker, keeping its name, namespace and
// termination grace period. A pod marked for deletion (never idle: it is
// terminating) or whose grace period does not fit in 32 bits is kept.
// Called with mu held.
func (s *podState) release(static bool) {
	p := s.activePod()
	if p == nil || p.DeletionGracePeriodSeconds != nil {
		return
	}
	g := p.Spec.TerminationGracePeriodSeconds
	if g != nil && int64(int32(*g)) != *g {
		return
	}
	s.relName, s.relNamespace, s.released, s.releasedStatic = p.Name, p.Namespace, true, static
	if s.relGraceSet = g != nil; g != nil {
		s.relGrace = int32(*g)
	}
	a := s.active
	a.pod = nil
	if a.mirror == nil && a.running == nil {
		s.active = nil
	}
}

// hasPod reports whether the worker has a pod, kept or dropped.
func (s *podState) hasPod() bool {
	return s.released || s.activePod() != nil
}

// pod returns the worker's pod: the one it keeps, or for a dropped one the
// latest from lookup, or a pod built from what was kept of it. Called with
// mu held.
func (s *podState) pod(lookup func(types.UID) *v1.Pod) *v1.Pod {
	if !s.released {
		return s.activePod()
	}
	if p := lookup(s.uid); p != nil && p.UID == s.uid {
		return p
	}
	return s.stub()
}

// stub builds a pod from what a worker kept of the pod it dropped: its
// name, namespace, UID and termination grace period. Called with mu held.
func (s *podState) stub() *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: s.relName, Namespace: s.relNamespace, UID: s.uid}}
	if s.relGraceSet {
		g := int64(s.relGrace)
		p.Spec.TerminationGracePeriodSeconds = &g
	}
	return p
}

// hydrate gives a worker whose pod was dropped the latest pod from lookup
// for a sync. It reports false, changing nothing, if lookup no longer has
// the pod. Called with mu held.
func (s *podState) hydrate(lookup func(types.UID) *v1.Pod) bool {
	if !s.released {
		return true
	}
	p := lookup(s.uid)
	if p == nil || p.UID != s.uid {
		return false
	}
	s.setPod(p)
	return true
}
