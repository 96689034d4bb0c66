package virtualnode

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"unique"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/nodekit/nodekit/podstatus"
)

// podCache is the pod cache of an Agent (or shared by a Sharded's agents):
// the store of a client-go Reflector watching every bound pod, which keeps
// a podEntry per pod of a managed node (pods of other nodes are not kept),
// by UID, not the decoded pod: its protobuf encoding, decoded when the
// agent needs the pod (an event, a resync, the kubelet API). With
// podworkers' LookupPod no decoded pod stays behind between syncs: a pod at
// rest costs its encoding (a few hundred bytes for a small pod) rather than
// a v1.Pod (1.2 KB for the struct alone, before its contents). It is its
// own informer: it hands each change to the handlers registered
// (addHandlers), as a shared informer would, without an informer's store
// and queue beside its records (100 bytes a pod).
//
// With each entry it keeps a digest (statusSum) and the shape
// (statusShape) of the status the API server has for the pod as far as the
// agent knows: of the latest event's, or of the agent's own patch since.
// "Report or not" compares digests, and the agent's patches need no copy of
// the server's status (ownedStatusPatch), so the encoded pods can do
// without most of their status (Config.TrimPodStatus): a pod at rest costs
// its encoding and 16 bytes of status mark.
type podCache struct {
	reflector *cache.Reflector
	managed   func(nodeName string) bool
	trim      bool

	seed maphash.Seed
	// coders code the encodings of managed pods against the first one in
	// the same phase (each set once, by the first transform of a managed
	// pod in its phase; phaseSlot): a pod's status (trimmed or not) is
	// what differs most between a pod just created and one running, and
	// against a reference of its own phase a running pod of make
	// bench-cluster's shape codes to 52 bytes instead of 86.
	coders [phaseSlots]atomic.Pointer[refCoder]

	// hmu serialises the deliveries to handlers with their registration and
	// removal: a handler added late is given every pod, then every change
	// after.
	hmu      sync.Mutex
	handlers []*podHandlers
	// synced is set once the first list was delivered.
	synced atomic.Bool

	mu sync.Mutex
	// pods has the latest entry of each pod of a managed node, by UID.
	pods map[types.UID]*podEntry
	// onNode lists the latest entries of each managed node's pods, in no
	// order (an informer index by node kept a set of keys per node: 1.5 MB
	// for 10,000 pods on 1,000 nodes, ten times these lists).
	onNode map[string][]*podEntry
}

// statusMark is what the cache keeps of a pod's status: its digest
// (statusSum) and its shape.
type statusMark struct {
	sum   uint64
	shape statusShape
}

// podEntry is what the cache keeps of a pod.
type podEntry struct {
	// name and uid are those of the pod's first entry in the cache, shared
	// by its later ones: what the workers and the provider keep of a pod
	// (its UID, name and namespace) is one copy, whichever entry they
	// decoded it from.
	name string
	uid  types.UID
	// data is the resource version (its first rvLen bytes) followed by the
	// protobuf encoding of the pod the agent hands out (a pod of a managed
	// node, with managed set; none otherwise) without the fields decode
	// puts back from the entry: one allocation. The encoding is coded
	// against the cache's first such encoding in the entry's phase by the
	// cache's coder of that phase.
	data     string
	rvLen    uint32
	deleting bool // the pod has a deletion timestamp
	managed  bool // the entry has an encoding
	// namespace, node and phase are interned: the pods of a namespace, of
	// a node, in a phase, share one copy of its name.
	namespace, node, phase unique.Handle[string]
	// mark is the digest and shape of the status the API server has, as
	// far as known: the entry's own status's until the agent patches it.
	// Guarded by the cache's mu once the entry is recorded.
	mark statusMark
}

// resourceVersion returns the resource version of the pod's entry.
func (e *podEntry) resourceVersion() string { return e.data[:e.rvLen] }

// enc returns the coded encoding of a managed pod, empty for another pod.
func (e *podEntry) enc() string { return e.data[e.rvLen:] }

// GetObjectMeta implements metav1.ObjectMetaAccessor, which the key
// function of the reflector's temporary store of a watch-list's initial
// events uses (Transformer).
func (e *podEntry) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: e.namespace.Value(), Name: e.name, UID: e.uid, ResourceVersion: e.resourceVersion()}
}

// phaseSlots is the number of reference coders of a pod cache: one for
// each phase and one for any other value (phaseSlot).
const phaseSlots = 5

// phaseSlot returns the index of the reference coder for pods in phase.
func phaseSlot(phase v1.PodPhase) int {
	switch phase {
	case v1.PodPending:
		return 0
	case v1.PodRunning:
		return 1
	case v1.PodSucceeded:
		return 2
	case v1.PodFailed:
		return 3
	default:
		return 4
	}
}

// podPhase returns the pod's phase.
func (e *podEntry) podPhase() v1.PodPhase { return v1.PodPhase(e.phase.Value()) }

// nodeName returns the name of the node the pod is bound to.
func (e *podEntry) nodeName() string { return e.node.Value() }

// decode returns the pod of a managed node's entry, or nil (no entry, a
// pod of another node, or an encoding that does not decode, which cannot
// happen for one the cache made). The coder is the cache's of the entry's
// phase (set by the first managed entry in it): an entry does not point to
// it, 16 bytes less a pod.
func (c *podCache) decode(e *podEntry) *v1.Pod {
	if e == nil || !e.managed {
		return nil
	}
	coder := c.coders[phaseSlot(e.podPhase())].Load()
	if coder == nil {
		return nil
	}
	buf := coder.buffer()
	defer coder.release(buf)
	raw, err := coder.decode((*buf)[:0], e.enc())
	if err != nil {
		return nil
	}
	*buf = raw
	p := &v1.Pod{}
	if p.Unmarshal(raw) != nil { // copies what it keeps: buf is reused
		return nil
	}
	p.Name, p.Namespace, p.UID, p.ResourceVersion = e.name, e.namespace.Value(), e.uid, e.resourceVersion()
	p.Spec.NodeName, p.Status.Phase = e.node.Value(), e.podPhase()
	return p
}

// newPodCache watches every pod bound to some node (one watch for all
// virtual nodes: a field selector cannot name several nodes) and keeps
// those of the managed nodes.
func newPodCache(cfg Config, managed func(nodeName string) bool) *podCache {
	sel := fields.OneTermNotEqualSelector("spec.nodeName", "").String()
	pods := cfg.Client.Pods(v1.NamespaceAll)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return pods.Watch(ctx, o)
		},
	}
	c := &podCache{managed: managed, trim: cfg.TrimPodStatus, seed: maphash.MakeSeed(), pods: map[types.UID]*podEntry{},
		onNode: map[string][]*podEntry{}}
	// The wrapper keeps the client's word on watch-list support (fake
	// clientsets have none).
	c.reflector = cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, cfg.Client), &v1.Pod{}, c,
		cache.ReflectorOptions{Name: "virtualnode pods", TypeDescription: "*v1.Pod", Clock: cfg.Clock})
	return c
}

// run lists and watches the pods until ctx is done.
func (c *podCache) run(ctx context.Context) { c.reflector.RunWithContext(ctx) }

// hasSynced reports whether the first list was delivered: to every
// handler registered by then, and to any registered later as it was added.
func (c *podCache) hasSynced() bool { return c.synced.Load() }

// podHandlers are what a consumer of the cache is told of the managed
// pods: each is called with the pod's entry, from the reflector's
// goroutine, one call at a time.
type podHandlers struct {
	// added: a pod new to the cache; updated: a pod it had; deleted: a
	// pod gone (deleted, or missing from a relist).
	added, updated, deleted func(*podEntry)
}

// addHandlers registers h and gives it every pod the cache has.
func (c *podCache) addHandlers(h *podHandlers) {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	c.handlers = append(c.handlers, h)
	c.mu.Lock()
	entries := make([]*podEntry, 0, len(c.pods))
	for _, e := range c.pods {
		entries = append(entries, e)
	}
	c.mu.Unlock()
	for _, e := range entries {
		h.added(e)
	}
}

// removeHandlers unregisters h: it is not called again once this returns.
func (c *podCache) removeHandlers(h *podHandlers) {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	c.handlers = slices.DeleteFunc(c.handlers, func(x *podHandlers) bool { return x == h })
}

// deliver tells the handlers of e: added, or updated if the cache had the
// pod (old). Called with hmu held.
func (c *podCache) deliver(old, e *podEntry) {
	for _, h := range c.handlers {
		if old == nil {
			h.added(e)
		} else {
			h.updated(e)
		}
	}
}

// Transformer implements cache.TransformingStore: the reflector's
// temporary store of a watch-list's initial events keeps entries, not
// pods, recorded by Replace.
func (c *podCache) Transformer() cache.TransformFunc {
	return func(obj any) (any, error) {
		if p, ok := obj.(*v1.Pod); ok {
			return c.transform(p)
		}
		return obj, nil
	}
}

// entryOf transforms a pod the reflector gives the store (a pod, or an
// entry from Transformer).
func (c *podCache) entryOf(obj any) (*podEntry, error) {
	switch o := obj.(type) {
	case *v1.Pod:
		return c.transform(o)
	case *podEntry:
		return o, nil
	}
	return nil, fmt.Errorf("virtualnode: pod cache: unexpected %T", obj)
}

// Add implements cache.ReflectorStore: a pod created, or seen.
func (c *podCache) Add(obj any) error {
	return c.apply(obj, func(e *podEntry) { c.deliver(c.record(e), e) })
}

// Update implements cache.ReflectorStore: a pod changed.
func (c *podCache) Update(obj any) error { return c.Add(obj) }

// Delete implements cache.ReflectorStore: a pod deleted from the API. The
// handlers get its final state.
func (c *podCache) Delete(obj any) error { return c.apply(obj, c.gone) }

// apply transforms a pod the reflector gives the store and, for a pod of
// a managed node, calls f with its entry and hmu held.
func (c *podCache) apply(obj any, f func(*podEntry)) error {
	e, err := c.entryOf(obj)
	if err != nil || !e.managed {
		return err
	}
	c.hmu.Lock()
	defer c.hmu.Unlock()
	f(e)
	return nil
}

// gone forgets e's pod and tells the handlers, if the cache had it.
// Called with hmu held.
func (c *podCache) gone(e *podEntry) {
	if !c.forget(e.uid) {
		return
	}
	for _, h := range c.handlers {
		h.deleted(e)
	}
}

// Replace implements cache.ReflectorStore: the pods of a (re)list. Pods
// the cache has are updated, new ones added, and those the list lacks
// (deleted while the watch was down, or replaced under their name by
// another of another UID) deleted.
func (c *podCache) Replace(list []any, _ string) error {
	entries := make([]*podEntry, 0, len(list))
	for _, obj := range list {
		e, err := c.entryOf(obj)
		if err != nil {
			return err // the reflector lists again
		}
		if e.managed {
			entries = append(entries, e)
		}
	}
	c.hmu.Lock()
	defer c.hmu.Unlock()
	listed := make(map[types.UID]bool, len(entries))
	for _, e := range entries {
		listed[e.uid] = true
		c.deliver(c.record(e), e)
	}
	c.mu.Lock()
	var missing []*podEntry
	for uid, e := range c.pods {
		if !listed[uid] {
			missing = append(missing, e)
		}
	}
	c.mu.Unlock()
	for _, e := range missing {
		c.gone(e)
	}
	c.synced.Store(true)
	return nil
}

// Resync implements cache.ReflectorStore; there is nothing to resync.
func (c *podCache) Resync() error { return nil }

// transform returns the entry the cache keeps of p: of a pod of another
// node its identity only; of a managed pod also the mark of its status and
// its encoding, without managed fields and, with Config.TrimPodStatus,
// with only the status fields the agent and a provider adopting a running
// pod read. A pod the cache has gets the name and UID strings of its entry.
// p is not modified.
func (c *podCache) transform(p *v1.Pod) (*podEntry, error) {
	if uint64(len(p.ResourceVersion)) > math.MaxUint32 {
		return nil, fmt.Errorf("virtualnode: pod %s/%s: resource version of %d bytes", p.Namespace, p.Name, len(p.ResourceVersion))
	}
	e := &podEntry{namespace: unique.Make(p.Namespace), name: p.Name, uid: p.UID, data: p.ResourceVersion,
		rvLen: uint32(len(p.ResourceVersion)), node: unique.Make(p.Spec.NodeName), phase: unique.Make(string(p.Status.Phase)),
		deleting: p.DeletionTimestamp != nil}
	if !c.managed(p.Spec.NodeName) {
		return e, nil
	}
	c.mu.Lock()
	if old, ok := c.pods[p.UID]; ok && old.name == e.name {
		e.name, e.uid = old.name, old.uid // one copy per pod
	}
	c.mu.Unlock()
	sum, err := statusSum(c.seed, &p.Status)
	if err != nil {
		return nil, fmt.Errorf("virtualnode: pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	e.mark = statusMark{sum: sum, shape: shapeOf(&p.Status)}
	q := *p
	q.ManagedFields = nil
	if c.trim {
		q.Status = trimStatus(&p.Status)
	}
	q.Name, q.Namespace, q.UID, q.ResourceVersion, q.Spec.NodeName, q.Status.Phase = "", "", "", "", "", ""
	if err := c.encode(e, &q); err != nil {
		return nil, fmt.Errorf("virtualnode: encode pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return e, nil
}

// record makes e, of a managed pod, the pod's entry and lists it under its
// node, and returns the entry it replaces (nil for a pod new to the
// cache).
func (c *podCache) record(e *podEntry) (old *podEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Keyed by the entry's UID, shared with the pod's first entry: an
	// assignment replaces a map's string key with the one given, and the
	// decoded pod's own copy would double what a pod's UID costs.
	old = c.pods[e.uid]
	c.pods[e.uid] = e
	list := c.onNode[e.nodeName()] // a bound pod's node never changes
	if old != nil {
		if i := slices.Index(list, old); i >= 0 {
			list[i] = e
			return old
		}
	}
	c.onNode[e.nodeName()] = append(list, e)
	return old
}

// encode sets e's encoding of q, coded against the cache's reference for
// e's phase (q's own encoding, for the first pod in that phase).
func (c *podCache) encode(e *podEntry, q *v1.Pod) error {
	slot := &c.coders[phaseSlot(e.podPhase())]
	coder := slot.Load()
	var raw *[]byte
	if coder != nil {
		raw = coder.buffer()
		defer coder.release(raw)
	} else {
		raw = new([]byte)
	}
	size := q.Size()
	if cap(*raw) < size {
		*raw = make([]byte, size)
	}
	n, err := q.MarshalTo((*raw)[:size])
	if err != nil {
		return err
	}
	if coder == nil {
		slot.CompareAndSwap(nil, newRefCoder((*raw)[:n]))
		coder = slot.Load()
	}
	ops := coder.buffer()
	defer coder.release(ops)
	*ops = coder.encode((*ops)[:0], (*raw)[:n])
	e.data, e.managed = e.data+string(*ops), true
	return nil
}

// unlist removes e from its node's list. Called with mu held.
func (c *podCache) unlist(e *podEntry) {
	node := e.nodeName()
	list := c.onNode[node]
	i := slices.Index(list, e)
	if i < 0 {
		return
	}
	list[i] = list[len(list)-1]
	list[len(list)-1] = nil
	list = list[:len(list)-1]
	if len(list) == 0 {
		delete(c.onNode, node)
		return
	}
	c.onNode[node] = list
}

// podsOn returns the latest entries of the pods of managed nodes.
func (c *podCache) podsOn(nodes ...string) []*podEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, node := range nodes {
		n += len(c.onNode[node])
	}
	entries := make([]*podEntry, 0, n)
	for _, node := range nodes {
		entries = append(entries, c.onNode[node]...)
	}
	return entries
}

// named returns the latest entry of the pod of that namespace and name,
// or nil: a walk of every pod, for the kubelet API's requests by name
// (logs, exec, attach, port forwarding), not kept in an index for them.
func (c *podCache) named(namespace, name string) *podEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.pods {
		if e.name == name && e.namespace.Value() == namespace {
			return e
		}
	}
	return nil
}

// lastStatus returns the mark of the status the API server has for uid,
// as far as known.
func (c *podCache) lastStatus(uid types.UID) (statusMark, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[uid]; ok {
		return e.mark, true
	}
	return statusMark{}, false
}

// reported records the mark of the status the agent just patched.
func (c *podCache) reported(uid types.UID, mark statusMark) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[uid]; ok { // not a pod deleted meanwhile
		e.mark = mark
	}
}

// forget drops what the cache has of a pod gone from the API, reporting
// whether it had the pod.
func (c *podCache) forget(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.pods[uid]
	if ok {
		c.unlist(e)
		delete(c.pods, uid)
	}
	return ok
}

// trimStatus returns what the cache keeps of a pod's status with
// Config.TrimPodStatus: what the agent reads (phase, reason, message, QoS
// class), what a provider adopting a running pod needs (start time, pod
// and host IPs), and everything the agent does not write (the conditions
// the kubelet does not own, the scheduler's nominated node, resource claim
// statuses), which its patches leave alone and "report or not" compares.
func trimStatus(s *v1.PodStatus) v1.PodStatus {
	t := v1.PodStatus{Phase: s.Phase, Reason: s.Reason, Message: s.Message, QOSClass: s.QOSClass, StartTime: s.StartTime,
		PodIP: s.PodIP, PodIPs: s.PodIPs, HostIP: s.HostIP, HostIPs: s.HostIPs, NominatedNodeName: s.NominatedNodeName,
		ResourceClaimStatuses: s.ResourceClaimStatuses, ExtendedResourceClaimStatus: s.ExtendedResourceClaimStatus}
	for _, c := range s.Conditions {
		if !podstatus.OwnedByKubelet(c.Type) {
			t.Conditions = append(t.Conditions, c)
		}
	}
	return t
}

// entry returns the latest entry of a managed pod, or nil.
func (c *podCache) entry(uid types.UID) *podEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pods[uid]
}

// pod returns the latest pod of a managed node with that UID, decoded
// afresh (the caller may keep it), or nil. It is podworkers' LookupPod.
func (c *podCache) pod(uid types.UID) *v1.Pod {
	return c.decode(c.entry(uid))
}
