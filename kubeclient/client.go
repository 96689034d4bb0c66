package kubeclient

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Client implements Interface against an API server. Build it with
// NewForConfig; it is safe for concurrent use.
type Client struct {
	params                           runtime.ParameterCodec
	core, coordination, authn, authz rest.Interface // one per API group
}

var _ Interface = (*Client)(nil)

// NewForConfig returns a Client for c, as client-go's kubernetes.NewForConfig
// does for its clientset: one HTTP client (connection pool) shared by all
// resources, and one client-side rate limiter from c.QPS and c.Burst unless
// c.RateLimiter is set. c is not modified.
func NewForConfig(c *rest.Config) (*Client, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeclient: %w", err)
	}
	return NewForConfigAndClient(&cfg, httpClient)
}

// NewForConfigAndClient is NewForConfig with the HTTP client given.
func NewForConfigAndClient(c *rest.Config, httpClient *http.Client) (*Client, error) {
	cfg := *c
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("kubeclient: Burst must be greater than 0 when QPS is set and RateLimiter is not")
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	for _, add := range []func(*runtime.Scheme) error{v1.AddToScheme, coordinationv1.AddToScheme,
		authenticationv1.AddToScheme, authorizationv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("kubeclient: %w", err)
		}
	}
	codecs := rest.CodecFactoryForGeneratedClient(scheme, serializer.NewCodecFactory(scheme)).WithoutConversion()
	restClient := func(apiPath string, gv schema.GroupVersion) (rest.Interface, error) {
		gc := cfg
		gc.GroupVersion, gc.APIPath, gc.NegotiatedSerializer = &gv, apiPath, codecs
		rc, err := rest.RESTClientForConfigAndClient(&gc, httpClient)
		if err != nil {
			return nil, fmt.Errorf("kubeclient: %s: %w", gv, err)
		}
		return rc, nil
	}
	cl := &Client{params: paramCodec{runtime.NewParameterCodec(scheme)}}
	var err error
	if cl.core, err = restClient("/api", v1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	if cl.coordination, err = restClient("/apis", coordinationv1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	if cl.authn, err = restClient("/apis", authenticationv1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	if cl.authz, err = restClient("/apis", authorizationv1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	return cl, nil
}

// Pods implements PodsGetter.
func (c *Client) Pods(namespace string) PodInterface {
	return gentype.NewClientWithList[*v1.Pod, *v1.PodList]("pods", c.core, c.params, namespace,
		func() *v1.Pod { return &v1.Pod{} }, func() *v1.PodList { return &v1.PodList{} },
		gentype.PrefersProtobuf[*v1.Pod]())
}

// Nodes implements NodesGetter.
func (c *Client) Nodes() NodeInterface {
	return gentype.NewClient[*v1.Node]("nodes", c.core, c.params, "",
		func() *v1.Node { return &v1.Node{} }, gentype.PrefersProtobuf[*v1.Node]())
}

// Leases implements LeasesGetter.
func (c *Client) Leases(namespace string) LeaseInterface {
	return gentype.NewClient[*coordinationv1.Lease]("leases", c.coordination, c.params, namespace,
		func() *coordinationv1.Lease { return &coordinationv1.Lease{} }, gentype.PrefersProtobuf[*coordinationv1.Lease]())
}

// TokenReviews implements TokenReviewsGetter.
func (c *Client) TokenReviews() TokenReviewInterface {
	return gentype.NewClient[*authenticationv1.TokenReview]("tokenreviews", c.authn, c.params, "",
		func() *authenticationv1.TokenReview { return &authenticationv1.TokenReview{} },
		gentype.PrefersProtobuf[*authenticationv1.TokenReview]())
}

// SubjectAccessReviews implements SubjectAccessReviewsGetter.
func (c *Client) SubjectAccessReviews() SubjectAccessReviewInterface {
	return gentype.NewClient[*authorizationv1.SubjectAccessReview]("subjectaccessreviews", c.authz, c.params, "",
		func() *authorizationv1.SubjectAccessReview { return &authorizationv1.SubjectAccessReview{} },
		gentype.PrefersProtobuf[*authorizationv1.SubjectAccessReview]())
}

// paramCodec encodes request options as query parameters. The options the
// node-path blocks send with nearly every request (a lease renewal's
// UpdateOptions, a status patch's PatchOptions, a read's GetOptions) are
// empty, and encode to no parameter: those skip the scheme's conversion
// (2% of a virtual node agent's steady CPU); any other goes to the scheme's
// codec.
type paramCodec struct{ runtime.ParameterCodec }

// EncodeParameters implements runtime.ParameterCodec.
func (c paramCodec) EncodeParameters(obj runtime.Object, to schema.GroupVersion) (url.Values, error) {
	switch obj.(type) {
	case *metav1.GetOptions, *metav1.CreateOptions, *metav1.UpdateOptions, *metav1.PatchOptions:
		if v := reflect.ValueOf(obj); !v.IsNil() && v.Elem().IsZero() {
			return url.Values{}, nil
		}
	}
	return c.ParameterCodec.EncodeParameters(obj, to)
}
