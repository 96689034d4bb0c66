package virtualnode

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// podCache is the pod informer of an Agent (or shared by a Sharded's
// agents) and, beside it, the status the API server has for each pod of a
// managed node as far as the agent knows: the protobuf encoding of the
// status of the latest informer event, or of the agent's own patch since.
// Equal statuses encode equally (map keys in order, times as instants), so
// "report or not" is a byte comparison, and an encoding is about a third of
// the memory of the decoded status, with nothing in it for the garbage
// collector to scan. That lets the informer's pods do without most of their
// status (Config.TrimPodStatus).
type podCache struct {
	inf     cache.SharedIndexInformer
	managed func(nodeName string) bool

	mu     sync.Mutex
	status map[types.UID][]byte
	// keys finds a managed pod's informer key by UID (cheaper than an
	// index, which keeps a set per UID).
	keys map[types.UID]string
}

// newPodCache watches every pod bound to some node (one watch for all
// virtual nodes: a field selector cannot name several nodes); the handlers
// and the desired set filter on the managed names. Pods of other nodes are
// kept as their names and node only.
func newPodCache(cfg Config, managed func(nodeName string) bool) *podCache {
	sel := fields.OneTermNotEqualSelector("spec.nodeName", "").String()
	pods := cfg.Client.CoreV1().Pods(v1.NamespaceAll)
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
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, cfg.Client), &v1.Pod{}, 0, cache.Indexers{
		byNode: func(obj any) ([]string, error) {
			if p, ok := obj.(*v1.Pod); ok {
				return []string{p.Spec.NodeName}, nil
			}
			return nil, nil
		},
	})
	c := &podCache{inf: inf, managed: managed, status: map[types.UID][]byte{}, keys: map[types.UID]string{}}
	_ = inf.SetTransform(func(obj any) (any, error) {
		if p, ok := obj.(*v1.Pod); ok {
			return c.transform(p, cfg.TrimPodStatus), nil
		}
		return obj, nil
	})
	// Registered before the informer runs: no event is missed.
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if p, ok := obj.(*v1.Pod); ok {
			c.forget(p.UID)
		}
	}})
	return c
}

// transform returns what the informer keeps of p: never managed fields; of
// a pod of another node its identity only; of a managed pod its status
// recorded in encoded form, and with trim only the status fields the agent
// and a provider adopting a running pod read.
//
// The decoded object may be shared with the client (fake clientsets hand out
// their stored objects): it is copied, never modified.
func (c *podCache) transform(p *v1.Pod, trim bool) *v1.Pod {
	if !c.managed(p.Spec.NodeName) {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
				DeletionTimestamp: p.DeletionTimestamp},
			Spec: v1.PodSpec{NodeName: p.Spec.NodeName},
		}
	}
	enc, err := p.Status.Marshal()
	key, keyErr := cache.MetaNamespaceKeyFunc(p)
	c.mu.Lock()
	if err == nil {
		c.status[p.UID] = enc
	}
	if _, ok := c.keys[p.UID]; !ok && keyErr == nil {
		c.keys[p.UID] = key
	}
	c.mu.Unlock()
	q := *p
	q.ManagedFields = nil
	if trim {
		s := &p.Status
		q.Status = v1.PodStatus{Phase: s.Phase, Reason: s.Reason, QOSClass: s.QOSClass, StartTime: s.StartTime,
			PodIP: s.PodIP, PodIPs: s.PodIPs, HostIP: s.HostIP, HostIPs: s.HostIPs}
	}
	return &q
}

// lastStatus returns the encoded status the API server has for uid, as far
// as known.
func (c *podCache) lastStatus(uid types.UID) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	enc, ok := c.status[uid]
	return enc, ok
}

// reported records enc, the encoded status the agent just patched.
func (c *podCache) reported(uid types.UID, enc []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.status[uid]; ok { // not a pod deleted meanwhile
		c.status[uid] = enc
	}
}

// forget drops what the cache remembers of a pod gone from the API.
func (c *podCache) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.status, uid)
	delete(c.keys, uid)
}

// withStatus returns pod with the full status the API server has, as far as
// known (a shallow copy: read only).
func (c *podCache) withStatus(pod *v1.Pod) *v1.Pod {
	enc, ok := c.lastStatus(pod.UID)
	var st v1.PodStatus
	if !ok || st.Unmarshal(enc) != nil {
		return pod
	}
	p := *pod
	p.Status = st
	return &p
}

// pod returns the informer's copy of a managed pod, or nil.
func (c *podCache) pod(uid types.UID) *v1.Pod {
	c.mu.Lock()
	key, ok := c.keys[uid]
	c.mu.Unlock()
	if !ok {
		return nil
	}
	obj, ok, err := c.inf.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		return nil
	}
	if p, _ := obj.(*v1.Pod); p != nil && p.UID == uid { // not one recreated under the name
		return p
	}
	return nil
}
