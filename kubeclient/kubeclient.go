package kubeclient

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// PodInterface reads, watches, patches and deletes the pods of one
// namespace (all namespaces for List and Watch when it is "").
type PodInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1.Pod, error)
	List(ctx context.Context, opts metav1.ListOptions) (*v1.PodList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*v1.Pod, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// NodeInterface registers, reads and patches Nodes.
type NodeInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1.Node, error)
	Create(ctx context.Context, node *v1.Node, opts metav1.CreateOptions) (*v1.Node, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*v1.Node, error)
}

// LeaseInterface reads, creates and updates the Leases of one namespace.
type LeaseInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
}

// TokenReviewInterface asks the API server who a bearer token belongs to.
type TokenReviewInterface interface {
	Create(ctx context.Context, review *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

// SubjectAccessReviewInterface asks the API server whether a user may do
// something.
type SubjectAccessReviewInterface interface {
	Create(ctx context.Context, review *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// PodsGetter returns the pod client of a namespace.
type PodsGetter interface {
	Pods(namespace string) PodInterface
}

// NodesGetter returns the Node client.
type NodesGetter interface {
	Nodes() NodeInterface
}

// LeasesGetter returns the Lease client of a namespace.
type LeasesGetter interface {
	Leases(namespace string) LeaseInterface
}

// TokenReviewsGetter returns the TokenReview client.
type TokenReviewsGetter interface {
	TokenReviews() TokenReviewInterface
}

// SubjectAccessReviewsGetter returns the SubjectAccessReview client.
type SubjectAccessReviewsGetter interface {
	SubjectAccessReviews() SubjectAccessReviewInterface
}

// Interface is every resource of this package: what an agent assembled
// from the node-path blocks needs of the API server.
type Interface interface {
	PodsGetter
	NodesGetter
	LeasesGetter
	TokenReviewsGetter
	SubjectAccessReviewsGetter
}
