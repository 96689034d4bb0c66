package pleg

import (
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit/nodekit/containerid"
)

// entry is one sandbox or container of a pod as a listing showed it.
type entry struct {
	id      string
	state   State
	sandbox bool
}

// podRecord is what the generator knows of one pod: old is the listing its
// last delivered events and cached status were based on, cur the latest
// listing. Records are touched only under Generator.relistMu.
type podRecord struct {
	uid       types.UID
	old, cur  []entry
	gen       uint64 // relist generation cur was filled in
	reinspect bool   // the last status fetch failed: fetch again
}

// record returns the record of uid, creating it, with cur emptied if it was
// filled in an older generation.
func (g *Generator) record(uid types.UID) *podRecord {
	rec, ok := g.records[uid]
	if !ok {
		rec = &podRecord{uid: uid}
		g.records[uid] = rec
	}
	if rec.gen != g.gen {
		rec.cur = rec.cur[:0]
		rec.gen = g.gen
	}
	return rec
}

// group fills the cur listing of every record from a full listing.
// Containers belong to the pod of their sandbox; a container whose sandbox
// is not listed belongs to the pod named by its PodUIDLabel, or is ignored.
func (g *Generator) group(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container) {
	g.gen++
	clear(g.sbIndex)
	for _, s := range sandboxes {
		uid := s.GetMetadata().GetUid()
		if uid == "" {
			continue
		}
		rec := g.record(types.UID(uid))
		rec.cur = append(rec.cur, entry{id: s.Id, state: SandboxState(s.State), sandbox: true})
		g.sbIndex[s.Id] = rec
	}
	for _, c := range containers {
		rec := g.sbIndex[c.PodSandboxId]
		if rec == nil {
			uid := c.Labels[PodUIDLabel]
			if uid == "" {
				continue
			}
			rec = g.record(types.UID(uid))
		}
		rec.cur = append(rec.cur, entry{id: c.Id, state: ContainerState(c.State)})
	}
	for _, rec := range g.records {
		if rec.gen != g.gen {
			rec.cur = rec.cur[:0]
			rec.gen = g.gen
		}
	}
}

// diff appends to dst the events between rec.old and rec.cur, old entries
// first, in listing order.
// Container IDs get runtime as their Type.
func diff(dst []PodLifecycleEvent, rec *podRecord, runtime string) []PodLifecycleEvent {
	for i, o := range rec.old {
		id := containerid.ID{Type: runtime, ID: o.id}
		dst = Transition(dst, rec.uid, id, o.state, findState(rec.cur, i, o.id))
	}
	for i, c := range rec.cur {
		if findState(rec.old, i, c.id) == NonExistent {
			id := containerid.ID{Type: runtime, ID: c.id}
			dst = Transition(dst, rec.uid, id, NonExistent, c.state)
		}
	}
	return dst
}

// findState returns the state of id in list, NonExistent if absent. It
// tries index hint first: listings usually come in the same order.
func findState(list []entry, hint int, id string) State {
	if hint < len(list) && list[hint].id == id {
		return list[hint].state
	}
	for _, e := range list {
		if e.id == id {
			return e.state
		}
	}
	return NonExistent
}

// commit makes the current listing the base of the next comparison.
func (rec *podRecord) commit() {
	rec.old, rec.cur = rec.cur, rec.old[:0]
	rec.reinspect = false
}
