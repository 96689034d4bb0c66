package syncloop

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
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

// Name returns APIServerSourceName ("api").
func (s *APIServerSource) Name() string { return APIServerSourceName }

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
	store := cache.NewUndeltaStore(s.pusher(ctx, set), cache.MetaNamespaceKeyFunc)
	r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, s.cfg.Client), &v1.Pod{}, store,
		cache.ReflectorOptions{Name: "syncloop-apiserver-source", Logger: &logger, Clock: s.cfg.Clock})
	logger.Info("Watching apiserver", "node", s.cfg.NodeName)
	r.RunWithContext(ctx)
	return nil
}

// pusher returns the UndeltaStore's push function: the store's pods of this
// node, as one snapshot, to set. The store's objects are shared with the
// reflector and the merger annotates what it is given, so set gets copies:
// one per version of a pod (the store replaces an object when it changes),
// not one per pod at every event. The function is called by one goroutine.
func (s *APIServerSource) pusher(ctx context.Context, set SetFunc) func([]any) {
	type copied struct{ from, pod *v1.Pod }
	var copies map[types.UID]copied
	return func(objs []any) {
		out := make([]*v1.Pod, 0, len(objs))
		next := make(map[types.UID]copied, len(objs))
		for _, o := range objs {
			p, ok := o.(*v1.Pod)
			if !ok || p.Spec.NodeName != s.cfg.NodeName {
				continue
			}
			c, ok := copies[p.UID]
			if !ok || c.from != p {
				c = copied{from: p, pod: p.DeepCopy()}
			}
			next[p.UID] = c
			out = append(out, c.pod)
		}
		copies = next
		set(ctx, out)
	}
}
