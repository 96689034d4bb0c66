package podworkers

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// Static pods with the same full name (name_namespace) run one at a time, in
// the order the workers first saw them: the next may start only once the
// previous one is finished (or forgotten). Unlike upstream, which retries a
// waiting pod after the backoff, the next waiting pod is scheduled as soon as
// the name is released.

// waitStatic records that st, a static pod seen for the first time, waits
// for its full name. Called with mu held.
func (w *Workers) waitStatic(st *podState) {
	name := w.staticNames[st.uid]
	w.waitingStatic[name] = append(w.waitingStatic[name], st.uid)
}

// allowStaticStart reports whether st may start now, claiming its full name
// if so: no other pod holds the name and st is the first live pod waiting
// for it. Called with mu held.
func (w *Workers) allowStaticStart(st *podState) bool {
	name := w.staticNames[st.uid]
	if holder, ok := w.startedStatic[name]; ok {
		return holder == st.uid
	}
	waiting := w.waitingStatic[name]
	for i, uid := range waiting {
		if !w.canStartStatic(uid) {
			continue
		}
		if uid != st.uid {
			w.setWaiting(name, waiting[i:])
			return false
		}
		waiting = waiting[i+1:]
		break
	}
	w.setWaiting(name, waiting)
	w.startedStatic[name] = st.uid
	return true
}

// canStartStatic reports whether a waiting UID is still a candidate.
func (w *Workers) canStartStatic(uid types.UID) bool {
	st, ok := w.pods[uid]
	return ok && !st.terminationRequested() && !st.terminated()
}

func (w *Workers) setWaiting(fullname string, uids []types.UID) {
	if len(uids) == 0 {
		delete(w.waitingStatic, fullname)
		return
	}
	w.waitingStatic[fullname] = uids
}

// releaseStatic frees st's full name if st holds it and schedules the next
// waiting pod that has work. Called with mu held.
func (w *Workers) releaseStatic(st *podState) {
	name := w.staticNames[st.uid]
	if holder, ok := w.startedStatic[name]; !ok || holder != st.uid {
		return
	}
	delete(w.startedStatic, name)
	for _, uid := range w.waitingStatic[name] {
		if !w.canStartStatic(uid) {
			continue
		}
		if next := w.pods[uid]; next.pending != nil {
			w.schedule(next)
		}
		return
	}
}

// unwaitStatic removes a forgotten pod from its name's waiting list.
// Called with mu held.
func (w *Workers) unwaitStatic(st *podState) {
	name := w.staticNames[st.uid]
	waiting, ok := w.waitingStatic[name]
	if !ok {
		return
	}
	w.setWaiting(name, slices.DeleteFunc(slices.Clone(waiting), func(uid types.UID) bool { return uid == st.uid }))
}
