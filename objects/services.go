package objects

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Services is every Service of the cluster, watched, for the containers'
// service environment variables (the kubelet's service lister). One
// informer rather than client-go's factory, which links every API group's
// informers into a binary. Create it with NewServices and run it with Run.
type Services struct {
	inf cache.SharedIndexInformer
}

// NewServices returns the watch of every Service through client. It
// contacts nothing until Run.
func NewServices(client kubernetes.Interface) *Services {
	svcs := client.CoreV1().Services(metav1.NamespaceAll)
	lw := &cache.ListWatch{
		ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return svcs.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return svcs.Watch(ctx, o) },
	}
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &v1.Service{}, 0, cache.Indexers{})
	// Only names, ports and cluster IPs are read.
	_ = inf.SetTransform(func(obj any) (any, error) {
		if s, ok := obj.(*v1.Service); ok {
			s.ManagedFields = nil
		}
		return obj, nil
	})
	return &Services{inf: inf}
}

// Run watches until ctx is done.
func (s *Services) Run(ctx context.Context) error {
	s.inf.RunWithContext(ctx)
	return nil
}

// HasSynced tells whether the first list arrived.
func (s *Services) HasSynced() bool { return s.inf.HasSynced() }

// List returns the Services known; they are shared and must not be
// modified.
func (s *Services) List() ([]*v1.Service, error) {
	var out []*v1.Service
	for _, o := range s.inf.GetStore().List() {
		if svc, ok := o.(*v1.Service); ok {
			out = append(out, svc)
		}
	}
	return out, nil
}
