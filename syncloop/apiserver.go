package syncloop

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/kubetypes"
)

// APIServerSourceConfig configures an APIServerSource.
type APIServerSourceConfig struct {
	// Client reaches the API server; required. It needs, for the node's
	// identity, list and watch on pods across namespaces with the field
	// selector spec.nodeName=<NodeName>: granted to system:node:<name> by
	// the Node authorizer, or by RBAC rules {apiGroups: [""], resources:
	// [pods], verbs: [list, watch]} in a ClusterRole.
	Client kubernetes.Interface
	// NodeName selects the pods bound to this node; required.
	NodeName string
	// Clock is handed to the client-go reflector for its backoff; default
	// the real clock. The reflector's watch timeouts still run on real time
	// inside client-go.
	Clock clock.WithTicker
}

// APIServerSource lists and watches the pods bound to a node (upstream's
// NewSourceApiserver): a client-go reflector with the field selector
// spec.nodeName=<node> feeding an undelta store, so every change sends the
// full set. Pods of other nodes are dropped even if the server returns them.
type APIServerSource struct {
	cfg APIServerSourceConfig
}

// NewAPIServerSource validates cfg and returns an APIServerSource.
func NewAPIServerSource(cfg APIServerSourceConfig) (*APIServerSource, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("%w: APIServerSourceConfig.Client is required", ErrInvalidConfig)
	}
	if cfg.NodeName == "" {
		return nil, fmt.Errorf("%w: APIServerSourceConfig.NodeName is required", ErrInvalidConfig)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &APIServerSource{cfg: cfg}, nil
}

// Name returns kubetypes.APIServerSource ("api").
func (s *APIServerSource) Name() string { return kubetypes.APIServerSource }

// Run lists and watches until ctx is done; the first snapshot is sent once
// the initial list is in. It returns nil when ctx is done.
func (s *APIServerSource) Run(ctx context.Context, set SetFunc) error {
	logger := klog.FromContext(ctx)
	selector := fields.OneTermEqualSelector("spec.nodeName", s.cfg.NodeName).String()
	pods := s.cfg.Client.CoreV1().Pods(metav1.NamespaceAll)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			return pods.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return pods.Watch(ctx, opts)
		},
	}
	store := leanStore{cache.NewUndeltaStore(s.pusher(ctx, set), cache.MetaNamespaceKeyFunc)}
	r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, s.cfg.Client), &v1.Pod{}, store,
		cache.ReflectorOptions{Name: "syncloop-apiserver-source", Logger: &logger, Clock: s.cfg.Clock})
	logger.Info("Watching apiserver", "node", s.cfg.NodeName)
	r.RunWithContext(ctx)
	return nil
}

// pusher returns the UndeltaStore's push function: the store's pods of this
// node, as one snapshot, to set. They are the informer's objects, which the
// loop never modifies (it copies what it keeps, and shares the rest
// read-only); the reflector replaces an object when it changes.
func (s *APIServerSource) pusher(ctx context.Context, set SetFunc) func([]any) {
	return func(objs []any) {
		out := make([]*v1.Pod, 0, len(objs))
		for _, o := range objs {
			if p, ok := o.(*v1.Pod); ok && p.Spec.NodeName == s.cfg.NodeName {
				out = append(out, p)
			}
		}
		set(ctx, out)
	}
}

// leanStore drops the managed fields of the pods the reflector decodes
// before it stores them: the node agent never reads them, and they are a
// good part of a pod's size.
type leanStore struct{ *cache.UndeltaStore }

func dropManagedFields(obj any) {
	if p, ok := obj.(*v1.Pod); ok {
		p.ManagedFields = nil
	}
}

func (s leanStore) Add(obj any) error {
	dropManagedFields(obj)
	return s.UndeltaStore.Add(obj)
}

func (s leanStore) Update(obj any) error {
	dropManagedFields(obj)
	return s.UndeltaStore.Update(obj)
}

func (s leanStore) Replace(list []any, resourceVersion string) error {
	for _, obj := range list {
		dropManagedFields(obj)
	}
	return s.UndeltaStore.Replace(list, resourceVersion)
}
