package pleg

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/clockctx"
)

// RelistResult says what one relist did.
type RelistResult struct {
	// Pods is the number of pods in the listing.
	Pods int
	// Inspected is the number of pods whose status was fetched (or, for
	// vanished pods, dropped from the cache).
	Inspected int
	// Failed is the number of pods whose status fetch failed; they are
	// inspected again by the next relist.
	Failed int
	// Events is the number of events emitted (delivered or coalesced).
	Events int
}

// podWork is one pod to inspect during a relist.
type podWork struct {
	rec     *podRecord
	events  []PodLifecycleEvent
	status  *PodStatus
	err     error
	pending int // status calls not yet answered
}

// Relist lists all sandboxes and containers, compares them with the
// previous listing, fetches the status of the pods that changed or await
// re-inspection (StatusParallelism calls at a time), updates the cache and
// emits events pod by pod as their statuses arrive. Finally it advances the
// cache's global timestamp to the instant the listing started. It returns an
// error, and changes nothing, if listing fails; a pod whose status fetch
// fails is cached with the error, emits nothing, and is inspected again by
// the next relist.
func (g *Generator) Relist(ctx context.Context) (RelistResult, error) {
	g.relistMu.Lock()
	defer g.relistMu.Unlock()
	start := g.clock.Now()
	prev := g.lastRelistTime()
	var res RelistResult

	sandboxes, containers, err := g.listAll(ctx)
	if err != nil {
		err = fmt.Errorf("pleg: relist: %w", err)
		g.markRelisted(start, err)
		return res, err
	}
	g.group(sandboxes, containers)
	g.takeReinspections()

	var work []*podWork
	for _, rec := range g.records {
		if len(rec.cur) > 0 {
			res.Pods++
		}
		events := diff(g.scratch[:0], rec, g.cfg.RuntimeName)
		g.scratch = events[:0]
		if len(events) == 0 && !rec.reinspect {
			if len(rec.cur) == 0 {
				delete(g.records, rec.uid)
			}
			continue
		}
		work = append(work, &podWork{rec: rec, events: slices.Clone(events)})
	}
	g.inspect(ctx, work, start, &res)

	g.cache.UpdateTime(start)
	g.markRelisted(start, nil)
	g.em.flush()
	g.m.relisted(start, prev, g.clock.Since(start))
	return res, nil
}

func (g *Generator) listAll(ctx context.Context) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container, error) {
	cctx, cancel := clockctx.WithTimeout(ctx, g.clock, g.cfg.RuntimeRequestTimeout)
	defer cancel()
	sandboxes, err := g.rt.ListPodSandbox(cctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("list pod sandboxes: %w", callErr(cctx, err))
	}
	containers, err := g.rt.ListContainers(cctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("list containers: %w", callErr(cctx, err))
	}
	return sandboxes, containers, nil
}

// RelistPod relists one pod: it lists the pod's sandboxes (by PodUIDLabel)
// and their containers, and proceeds like Relist for that pod alone. If the
// pod did not change it marks the cached status as confirmed at the instant
// the listing started, releasing GetNewerThan waiters. The global timestamp
// is not advanced.
func (g *Generator) RelistPod(ctx context.Context, uid types.UID) (RelistResult, error) {
	g.relistMu.Lock()
	defer g.relistMu.Unlock()
	start := g.clock.Now()
	defer func() { g.m.podRelisted(g.clock.Since(start)) }()
	var res RelistResult

	rec, known := g.records[uid]
	var prev [][]entry
	if known {
		prev = [][]entry{rec.old, rec.cur}
	}
	entries, err := g.listPod(ctx, uid, prev...)
	if err != nil {
		return res, fmt.Errorf("pleg: relist pod %s: %w", uid, err)
	}
	g.takeReinspections()
	if !known {
		if len(entries) == 0 {
			g.cache.SetObservedTime(uid, start)
			return res, nil
		}
		rec = &podRecord{uid: uid}
		g.records[uid] = rec
	}
	rec.cur = append(rec.cur[:0], entries...)
	res.Pods = 1
	events := diff(g.scratch[:0], rec, g.cfg.RuntimeName)
	g.scratch = events[:0]
	if len(events) > 0 || rec.reinspect {
		g.inspect(ctx, []*podWork{{rec: rec, events: slices.Clone(events)}}, start, &res)
	}
	// Without a change (or for a pod now gone) this confirms the cache.
	g.cache.SetObservedTime(uid, start)
	g.em.flush()
	return res, nil
}

// listPod lists the sandboxes labelled with uid and their containers, and,
// when that cannot be the whole pod, the containers labelled with uid whose
// sandbox is not among them — the pod's share of a full listing as group
// assigns it, so that a single-pod relist and a full one never disagree
// about a container. known are the pod's previous listings.
//
// The labelled listing makes the runtime match every container's labels,
// the costliest call of the three on a busy node, and containers outside
// their pod's sandboxes are rare (a sandbox removed under them, or another
// client). So it is made only when no sandbox was found or when a container
// of known is missing from the sandboxes' listings; a container appearing
// outside the pod's sandboxes any other way is found by the next full
// relist.
func (g *Generator) listPod(ctx context.Context, uid types.UID, known ...[]entry) ([]entry, error) {
	cctx, cancel := clockctx.WithTimeout(ctx, g.clock, g.cfg.RuntimeRequestTimeout)
	defer cancel()
	sandboxes, err := g.rt.ListPodSandbox(cctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{PodUIDLabel: string(uid)}})
	if err != nil {
		return nil, fmt.Errorf("list pod sandboxes: %w", callErr(cctx, err))
	}
	var entries []entry
	ours := map[string]bool{}
	for _, s := range sandboxes {
		if s.GetMetadata().GetUid() != string(uid) {
			continue
		}
		ours[s.Id] = true
		entries = append(entries, entry{id: s.Id, state: SandboxState(s.State), sandbox: true})
		containers, err := g.rt.ListContainers(cctx, &runtimeapi.ContainerFilter{PodSandboxId: s.Id})
		if err != nil {
			return nil, fmt.Errorf("list containers of sandbox %s: %w", s.Id, callErr(cctx, err))
		}
		for _, c := range containers {
			entries = append(entries, entry{id: c.Id, state: ContainerState(c.State)})
		}
	}
	if len(ours) > 0 && !slices.ContainsFunc(known, func(k []entry) bool { return missingContainer(k, entries) }) {
		return entries, nil
	}
	labelled, err := g.rt.ListContainers(cctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{PodUIDLabel: string(uid)}})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", callErr(cctx, err))
	}
	for _, c := range labelled {
		if !ours[c.PodSandboxId] && c.Labels[PodUIDLabel] == string(uid) {
			entries = append(entries, entry{id: c.Id, state: ContainerState(c.State)})
		}
	}
	return entries, nil
}

// missingContainer reports whether a container of known is not in listed.
func missingContainer(known, listed []entry) bool {
	for _, k := range known {
		if k.sandbox {
			continue
		}
		if !slices.ContainsFunc(listed, func(l entry) bool { return l.id == k.id }) {
			return true
		}
	}
	return false
}

// inspect fetches the statuses of work's pods and applies each pod as soon
// as its statuses are in.
func (g *Generator) inspect(ctx context.Context, work []*podWork, start time.Time, res *RelistResult) {
	logger := klog.FromContext(ctx)
	fetching := work[:0:0]
	for _, pw := range work {
		if len(pw.rec.cur) > 0 {
			fetching = append(fetching, pw)
			continue
		}
		// Every sandbox and container is gone.
		logger.V(4).Info("Pod gone from the runtime", "podUID", pw.rec.uid)
		g.cache.Delete(pw.rec.uid)
		delete(g.records, pw.rec.uid)
		res.Inspected++
		g.deliver(pw)
		res.Events += len(pw.events)
	}
	g.fetch(ctx, fetching, func(pw *podWork) {
		res.Inspected++
		if pw.err != nil {
			logger.Error(pw.err, "Fetching pod status failed; will inspect it again", "podUID", pw.rec.uid)
			pw.rec.reinspect = true
			res.Failed++
			g.cache.Set(pw.rec.uid, nil, pw.err, start) // no partial status: readers get the error alone
			return
		}
		prev, _ := g.cache.Get(pw.rec.uid)
		var prevIPs []string
		if prev != nil {
			prevIPs = prev.IPs
		}
		finishStatus(pw.status, prevIPs)
		pw.status.Timestamp = start
		g.cache.Set(pw.rec.uid, pw.status, nil, start)
		pw.rec.commit()
		g.deliver(pw)
		res.Events += len(pw.events)
	})
}

// deliver emits a pod's events, or a PodSync after a re-inspection that
// found no change.
func (g *Generator) deliver(pw *podWork) {
	if len(pw.events) == 0 {
		pw.events = append(pw.events, PodLifecycleEvent{ID: pw.rec.uid, Type: PodSync})
	}
	for _, ev := range pw.events {
		g.em.emit(ev)
	}
}
