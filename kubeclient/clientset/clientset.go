// Package clientset adapts client-go's clientset (a real one or
// k8s.io/client-go/kubernetes/fake) to kubeclient.Interface, for hosts that
// already use it. Importing it links client-go's every API group; a host
// that needs nothing else uses kubeclient.NewForConfig instead.
package clientset

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/watchlist"

	"github.com/nodekit/nodekit/kubeclient"
)

// Wrap returns cs as a kubeclient.Interface. Whether cs supports watch-list
// semantics (fakes do not) is passed on to informers built on the result.
func Wrap(cs kubernetes.Interface) kubeclient.Interface {
	return wrapped{cs}
}

type wrapped struct{ cs kubernetes.Interface }

func (w wrapped) Pods(namespace string) kubeclient.PodInterface { return w.cs.CoreV1().Pods(namespace) }

func (w wrapped) Nodes() kubeclient.NodeInterface { return w.cs.CoreV1().Nodes() }

func (w wrapped) Leases(namespace string) kubeclient.LeaseInterface {
	return w.cs.CoordinationV1().Leases(namespace)
}

func (w wrapped) TokenReviews() kubeclient.TokenReviewInterface {
	return w.cs.AuthenticationV1().TokenReviews()
}

func (w wrapped) SubjectAccessReviews() kubeclient.SubjectAccessReviewInterface {
	return w.cs.AuthorizationV1().SubjectAccessReviews()
}

// IsWatchListSemanticsUnSupported tells client-go's informers whether the
// wrapped clientset streams watch lists.
func (w wrapped) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(w.cs)
}
