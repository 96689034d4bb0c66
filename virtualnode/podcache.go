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

// podCache is the pod informer of an Agent (or shared by a Sharded's
// agents). The informer keeps a podEntry per pod, not the decoded pod: of a
// pod of a managed node its protobuf encoding, decoded when the agent needs
// the pod (an event, a resync, the kubelet API); of a pod of another node
// its identity only. With podworkers' LookupPod no decoded pod stays behind
// between syncs: a pod at rest costs its encoding (a few hundred bytes for
// a small pod) rather than a v1.Pod (1.2 KB for the struct alone, before
// its contents).
//
// Beside the informer it keeps a digest (statusSum) and the shape
// (statusShape) of the status the API server has for each pod of a managed
// node as far as the agent knows: of the latest informer event's, or of the
// agent's own patch since. "Report or not" compares digests, and the
// agent's patches need no copy of the server's status (ownedStatusPatch),
// so the encoded pods can do without most of their status
// (Config.TrimPodStatus): a pod at rest costs its encoding and 16 bytes of
// status mark.
type podCache struct {
	inf     cache.SharedIndexInformer
	managed func(nodeName string) bool

	seed maphash.Seed
	// coder codes the encodings of managed pods against the first one
	// (set once, by the first transform of a managed pod).
	coder atomic.Pointer[refCoder]
	mu    sync.Mutex
	// pods has a record of each pod of a managed node, by UID (cheaper than
	// an index, which keeps a set per UID).
	pods map[types.UID]podRecord
	// onNode lists the UIDs of each managed node's pods in pods, in no
	// order (an informer index by node kept a set of keys per node: 1.5 MB
	// for 10,000 pods on 1,000 nodes, ten times these lists).
	onNode map[string][]types.UID
}

// podRecord is what the cache keeps of a pod of a managed node beside the
// informer.
type podRecord struct {
	// entry is the pod's latest entry, as transformed (it may be ahead of
	// the informer's store by the events not yet handled).
	entry *podEntry
	// mark is the digest and shape of the status the API server has, as
	// far as known.
	mark statusMark
}

// statusMark is what the cache keeps of a pod's status: its digest
// (statusSum) and its shape.
type statusMark struct {
	sum   uint64
	shape statusShape
}

// podEntry is what the informer keeps of a pod. It satisfies
// metav1.ObjectMetaAccessor, which the informer's key function and its
// resync detection use.
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
	// against the cache's first such encoding by the cache's coder.
	data     string
	rvLen    uint32
	deleting bool // the pod has a deletion timestamp
	managed  bool // the entry has an encoding
	// namespace, node and phase are interned: the pods of a namespace, of
	// a node, in a phase, share one copy of its name.
	namespace, node, phase unique.Handle[string]
}

// resourceVersion returns the resource version of the pod's entry.
func (e *podEntry) resourceVersion() string { return e.data[:e.rvLen] }

// enc returns the coded encoding of a managed pod, empty for another pod.
func (e *podEntry) enc() string { return e.data[e.rvLen:] }

// podPhase returns the pod's phase.
func (e *podEntry) podPhase() v1.PodPhase { return v1.PodPhase(e.phase.Value()) }

// GetObjectMeta implements metav1.ObjectMetaAccessor.
func (e *podEntry) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: e.namespace.Value(), Name: e.name, UID: e.uid, ResourceVersion: e.resourceVersion()}
}

// nodeName returns the name of the node the pod is bound to.
func (e *podEntry) nodeName() string { return e.node.Value() }

// decode returns the pod of a managed node's entry, or nil (no entry, a
// pod of another node, or an encoding that does not decode, which cannot
// happen for one the cache made). The coder is the cache's (set by the
// first managed entry): an entry does not point to it, 16 bytes less a
// pod.
func (c *podCache) decode(e *podEntry) *v1.Pod {
	coder := c.coder.Load()
	if e == nil || !e.managed || coder == nil {
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
// virtual nodes: a field selector cannot name several nodes); the handlers
// and the desired set filter on the managed names.
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
	// The wrapper keeps the client's word on watch-list support (fake
	// clientsets have none).
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, cfg.Client), &v1.Pod{}, 0, cache.Indexers{})
	c := &podCache{inf: inf, managed: managed, seed: maphash.MakeSeed(), pods: map[types.UID]podRecord{},
		onNode: map[string][]types.UID{}}
	_ = inf.SetTransform(func(obj any) (any, error) {
		if p, ok := obj.(*v1.Pod); ok {
			return c.transform(p, cfg.TrimPodStatus)
		}
		return obj, nil
	})
	// Registered before the informer runs: no event is missed.
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: c.onUpdate, DeleteFunc: c.onDelete})
	return c
}

// onUpdate forgets a pod replaced under its name by another (deleted and
// recreated while the watch was down: the relist sees an update).
func (c *podCache) onUpdate(old, obj any) {
	if o, n := entryOf(old), entryOf(obj); o != nil && n != nil && o.uid != n.uid {
		c.forget(o.uid)
	}
}

// onDelete forgets a pod gone from the API.
func (c *podCache) onDelete(obj any) {
	if e := entryOf(obj); e != nil {
		c.forget(e.uid)
	}
}

// entryOf returns the entry an informer handler was given, or nil.
func entryOf(obj any) *podEntry {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	e, _ := obj.(*podEntry)
	return e
}

// transform returns the entry the informer keeps of p: of a pod of another
// node its identity; of a managed pod also its encoding, without managed
// fields and, with trim, with only the status fields the agent and a
// provider adopting a running pod read. It records the pod's entry, the
// digest and shape of its status, and lists it under its node. p is not
// modified.
func (c *podCache) transform(p *v1.Pod, trim bool) (*podEntry, error) {
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
	if r, ok := c.pods[p.UID]; ok && r.entry.name == e.name {
		e.name, e.uid = r.entry.name, r.entry.uid // one copy per pod
	}
	c.mu.Unlock()
	sum, err := statusSum(c.seed, &p.Status)
	if err != nil {
		return nil, fmt.Errorf("virtualnode: pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	mark := statusMark{sum: sum, shape: shapeOf(&p.Status)}
	q := *p
	q.ManagedFields = nil
	if trim {
		q.Status = trimStatus(&p.Status)
	}
	q.Name, q.Namespace, q.UID, q.ResourceVersion, q.Spec.NodeName, q.Status.Phase = "", "", "", "", "", ""
	if err := c.encode(e, &q); err != nil {
		return nil, fmt.Errorf("virtualnode: encode pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Keyed by the entry's UID, shared with the pod's first entry: an
	// assignment replaces a map's string key with the one given, and the
	// decoded pod's own copy would double what a pod's UID costs.
	if _, ok := c.pods[e.uid]; !ok { // a bound pod's node never changes
		c.onNode[e.nodeName()] = append(c.onNode[e.nodeName()], e.uid)
	}
	c.pods[e.uid] = podRecord{entry: e, mark: mark}
	return e, nil
}

// encode sets e's encoding of q, coded against the cache's reference (q's
// own encoding, for the first pod).
func (c *podCache) encode(e *podEntry, q *v1.Pod) error {
	coder := c.coder.Load()
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
		c.coder.CompareAndSwap(nil, newRefCoder((*raw)[:n]))
		coder = c.coder.Load()
	}
	ops := coder.buffer()
	defer coder.release(ops)
	*ops = coder.encode((*ops)[:0], (*raw)[:n])
	e.data, e.managed = e.data+string(*ops), true
	return nil
}

// unlist removes uid from node's list. Called with mu held.
func (c *podCache) unlist(node string, uid types.UID) {
	uids := c.onNode[node]
	i := slices.Index(uids, uid)
	if i < 0 {
		return
	}
	uids[i] = uids[len(uids)-1]
	uids = uids[:len(uids)-1]
	if len(uids) == 0 {
		delete(c.onNode, node)
		return
	}
	c.onNode[node] = uids
}

// podsOn returns the latest entries of a managed node's pods.
func (c *podCache) podsOn(node string) []*podEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	uids := c.onNode[node]
	entries := make([]*podEntry, 0, len(uids))
	for _, uid := range uids {
		entries = append(entries, c.pods[uid].entry)
	}
	return entries
}

// lastStatus returns the mark of the status the API server has for uid,
// as far as known.
func (c *podCache) lastStatus(uid types.UID) (statusMark, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.pods[uid]
	return r.mark, ok
}

// reported records the mark of the status the agent just patched.
func (c *podCache) reported(uid types.UID, mark statusMark) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.pods[uid]; ok { // not a pod deleted meanwhile
		r.mark = mark
		c.pods[r.entry.uid] = r // the key stays the entries' copy
	}
}

// forget drops what the cache remembers of a pod gone from the API.
func (c *podCache) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.pods[uid]; ok {
		c.unlist(r.entry.nodeName(), uid)
		delete(c.pods, uid)
	}
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
	return c.pods[uid].entry
}

// pod returns the latest pod of a managed node with that UID, decoded
// afresh (the caller may keep it), or nil. It is podworkers' LookupPod.
func (c *podCache) pod(uid types.UID) *v1.Pod {
	return c.decode(c.entry(uid))
}
