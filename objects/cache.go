package objects

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// objectKind says which object a reference names.
type objectKind int

const (
	kindConfigMap objectKind = iota
	kindSecret
)

func (k objectKind) resource() schema.GroupResource {
	if k == kindSecret {
		return v1.Resource("secret")
	}
	return v1.Resource("configmap")
}

type objectKey struct {
	kind      objectKind
	namespace string
	name      string
}

// Cache keeps the configMaps and secrets that registered pods reference,
// each through its own single-object watch (list and watch with a
// metadata.name field selector), which is what the Node authorizer lets a
// node identity do for pods bound to it; the kubelet's default change
// detection strategy works the same way. Watches are shared between pods
// and end with the last pod that needs them; an immutable object's watch
// stops once it is seen, since it cannot change.
type Cache struct {
	client      kubernetes.Interface
	clock       clock.Clock
	syncTimeout time.Duration

	mu      sync.Mutex
	objects map[objectKey]*watchedObject
	pods    map[types.UID][]objectKey
}

type watchedObject struct {
	refs   int
	store  *syncStore
	cancel context.CancelFunc
	done   chan struct{}
}

// ErrInvalidConfig wraps every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("objects: invalid config")

// Config configures a Cache.
type Config struct {
	// Client reads the objects, as the node identity. Required.
	Client kubernetes.Interface
	// Clock drives the watches' backoff and the first-sync wait. Default
	// the real clock.
	Clock clock.Clock
	// SyncTimeout bounds how long a read waits for an object's first
	// list. Default one second, as the kubelet.
	SyncTimeout time.Duration
}

// New returns a Cache. Call Stop when done.
func New(cfg Config) (*Cache, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("%w: Client is required", ErrInvalidConfig)
	}
	if cfg.SyncTimeout < 0 {
		return nil, fmt.Errorf("%w: SyncTimeout %v must not be negative", ErrInvalidConfig, cfg.SyncTimeout)
	}
	if cfg.SyncTimeout == 0 {
		cfg.SyncTimeout = time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Cache{client: cfg.Client, clock: cfg.Clock, syncTimeout: cfg.SyncTimeout,
		objects: map[objectKey]*watchedObject{}, pods: map[types.UID][]objectKey{}}, nil
}

// Register starts (or shares) the watches of every configMap and secret
// pod references (volumes, env, envFrom, image pull secrets) and drops
// those it no longer references. Call it whenever a pod is synced.
func (c *Cache) Register(ctx context.Context, pod *v1.Pod) {
	var keys []objectKey
	cms, secrets := References(pod)
	for _, n := range cms {
		keys = append(keys, objectKey{kind: kindConfigMap, namespace: pod.Namespace, name: n})
	}
	for _, n := range secrets {
		keys = append(keys, objectKey{kind: kindSecret, namespace: pod.Namespace, name: n})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		o := c.objects[k]
		if o == nil {
			o = c.start(ctx, k)
			c.objects[k] = o
		}
		o.refs++
	}
	c.releaseLocked(c.pods[pod.UID])
	c.pods[pod.UID] = keys
}

// Unregister drops the pod's references; a watch nobody needs stops.
func (c *Cache) Unregister(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.releaseLocked(c.pods[uid])
	delete(c.pods, uid)
}

func (c *Cache) releaseLocked(keys []objectKey) {
	for _, k := range keys {
		o := c.objects[k]
		if o == nil {
			continue
		}
		if o.refs--; o.refs <= 0 {
			o.cancel()
			delete(c.objects, k)
		}
	}
}

// Stop ends every watch and waits for them.
func (c *Cache) Stop() {
	c.mu.Lock()
	var done []chan struct{}
	for k, o := range c.objects {
		o.cancel()
		done = append(done, o.done)
		delete(c.objects, k)
	}
	c.mu.Unlock()
	for _, d := range done {
		<-d
	}
}

func (c *Cache) start(ctx context.Context, k objectKey) *watchedObject {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	sel := fields.OneTermEqualSelector("metadata.name", k.name).String()
	store := newSyncStore(k.name, cancel)
	var lw *cache.ListWatch
	var example runtime.Object
	switch k.kind {
	case kindSecret:
		api := c.client.CoreV1().Secrets(k.namespace)
		example = &v1.Secret{}
		lw = &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.FieldSelector = sel
				l, err := api.List(ctx, o)
				store.listed(err)
				return l, err
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.FieldSelector = sel
				w, err := api.Watch(ctx, o)
				if err != nil {
					store.listed(err)
				}
				return w, err
			},
		}
	default:
		api := c.client.CoreV1().ConfigMaps(k.namespace)
		example = &v1.ConfigMap{}
		lw = &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.FieldSelector = sel
				l, err := api.List(ctx, o)
				store.listed(err)
				return l, err
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.FieldSelector = sel
				w, err := api.Watch(ctx, o)
				if err != nil {
					store.listed(err)
				}
				return w, err
			},
		}
	}
	// The wrapper tells the reflector when the client (a fake one) cannot
	// stream lists, so that it lists instead of waiting for a bookmark.
	r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, c.client), example, store, cache.ReflectorOptions{
		Name: fmt.Sprintf("object-%s/%s", k.namespace, k.name), Clock: c.clock})
	o := &watchedObject{store: store, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		r.RunWithContext(ctx)
	}()
	return o
}

// ConfigMap returns the configMap as last seen. A missing one is the API's
// NotFound error ("configmap \"name\" not found").
func (c *Cache) ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	o, err := c.get(ctx, objectKey{kind: kindConfigMap, namespace: namespace, name: name})
	if err != nil {
		return nil, err
	}
	return o.(*v1.ConfigMap), nil
}

// Secret returns the secret as last seen. A missing one is the API's
// NotFound error.
func (c *Cache) Secret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	o, err := c.get(ctx, objectKey{kind: kindSecret, namespace: namespace, name: name})
	if err != nil {
		return nil, err
	}
	return o.(*v1.Secret), nil
}

// get returns the object as last seen, waiting up to SyncTimeout for the
// first list.
func (c *Cache) get(ctx context.Context, k objectKey) (runtime.Object, error) {
	c.mu.Lock()
	o := c.objects[k]
	c.mu.Unlock()
	if o == nil {
		return nil, fmt.Errorf("object %q/%q not registered", k.namespace, k.name)
	}
	t := c.clock.NewTimer(c.syncTimeout)
	defer t.Stop()
	select {
	case <-o.store.synced:
	case <-t.C():
		reason := "timed out waiting for the condition"
		if err := o.store.listErr(); err != nil {
			reason = err.Error() // Forbidden, for an object of another node's pod
		}
		return nil, fmt.Errorf("failed to sync %s cache: %s", k.kind.resource().Resource, reason)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	obj := o.store.object()
	if obj == nil {
		return nil, apierrors.NewNotFound(k.kind.resource(), k.name)
	}
	return obj, nil
}

// syncStore is the one-object store a reflector fills: it remembers the
// object, signals the first list, and stops the watch once the object is
// immutable.
type syncStore struct {
	cache.Store
	name      string
	stopWatch context.CancelFunc
	synced    chan struct{}
	once      sync.Once

	mu      sync.Mutex
	obj     runtime.Object
	lastErr error // of the last list
}

// listed records the outcome of the last list (or failed watch).
func (s *syncStore) listed(err error) {
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
}

func (s *syncStore) listErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

func newSyncStore(name string, stopWatch context.CancelFunc) *syncStore {
	return &syncStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), name: name, stopWatch: stopWatch, synced: make(chan struct{})}
}

// mine reports whether obj is the watched object (a server that ignores
// the field selector sends others too).
func (s *syncStore) mine(obj any) bool {
	o, ok := obj.(metav1.Object)
	return ok && o.GetName() == s.name
}

func (s *syncStore) object() runtime.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.obj
}

func (s *syncStore) set(obj any) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil) // never read; the reflector's fresh object
	}
	ro, _ := obj.(runtime.Object)
	s.mu.Lock()
	s.obj = ro
	s.mu.Unlock()
	if isImmutable(ro) {
		s.stopWatch()
	}
}

func isImmutable(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *v1.ConfigMap:
		return o.Immutable != nil && *o.Immutable
	case *v1.Secret:
		return o.Immutable != nil && *o.Immutable
	}
	return false
}

// Add records the object.
func (s *syncStore) Add(obj any) error {
	if s.mine(obj) {
		s.set(obj)
	}
	return nil
}

// Update records the object.
func (s *syncStore) Update(obj any) error { return s.Add(obj) }

// Delete forgets the object.
func (s *syncStore) Delete(obj any) error {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if s.mine(obj) {
		s.mu.Lock()
		s.obj = nil
		s.mu.Unlock()
	}
	return nil
}

// Replace records the result of a list and marks the store synced.
func (s *syncStore) Replace(list []any, _ string) error {
	var found any
	for _, o := range list {
		if s.mine(o) {
			found = o
		}
	}
	// One assignment: a reader never sees the object missing mid-relist.
	if found != nil {
		s.set(found)
	} else {
		s.mu.Lock()
		s.obj = nil
		s.mu.Unlock()
	}
	s.once.Do(func() { close(s.synced) })
	return nil
}
