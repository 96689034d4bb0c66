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
	w.waitingStatic[st.fullname] = append(w.waitingStatic[st.fullname], st.uid)
}

// allowStaticStart reports whether st may start now, claiming its full name
// if so: no other pod holds the name and st is the first live pod waiting
// for it. Called with mu held.
func (w *Workers) allowStaticStart(st *podState) bool {
	if holder, ok := w.startedStatic[st.fullname]; ok {
		return holder == st.uid
	}
	waiting := w.waitingStatic[st.fullname]
	for i, uid := range waiting {
		if !w.canStartStatic(uid) {
			continue
		}
		if uid != st.uid {
			w.setWaiting(st.fullname, waiting[i:])
			return false
		}
		waiting = waiting[i+1:]
		break
	}
	w.setWaiting(st.fullname, waiting)
	w.startedStatic[st.fullname] = st.uid
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
	if holder, ok := w.startedStatic[st.fullname]; !ok || holder != st.uid {
		return
	}
	delete(w.startedStatic, st.fullname)
	for _, uid := range w.waitingStatic[st.fullname] {
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
	waiting, ok := w.waitingStatic[st.fullname]
	if !ok {
		return
	}
	w.setWaiting(st.fullname, slices.DeleteFunc(slices.Clone(waiting), func(uid types.UID) bool { return uid == st.uid }))
}
