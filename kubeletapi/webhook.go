package kubeletapi

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/clockctx"
	"github.com/nodekit/nodekit/kubeclient"
)

// The kubelet delegates authentication and authorization to the API server
// with TokenReviews and SubjectAccessReviews, caching the answers, and
// retrying a review that failed for a transient reason as the apiserver's
// webhook clients do (500ms, ×1.5, 20% jitter, 5 attempts). These are that,
// on the injected clock, without the apiserver's delegating factories and
// what they link in (CEL, OpenAPI, egress selection: half of an agent's
// executable).
const (
	retryInitial  = 500 * time.Millisecond
	retryFactor   = 1.5
	retryJitter   = 0.2
	retryAttempts = 5
	// maxCached bounds each decision cache.
	maxCached = 4096
)

// review runs call until it succeeds, fails for good, or ctx ends; the
// whole is bounded by timeout.
func review(ctx context.Context, clk clock.WithTicker, timeout time.Duration, call func(context.Context) error) error {
	ctx, cancel := clockctx.WithTimeout(ctx, clk, timeout)
	defer cancel()
	wait := retryInitial
	for attempt := 1; ; attempt++ {
		err := call(ctx)
		if err == nil || attempt == retryAttempts || !retryable(err) {
			return err
		}
		d := time.Duration(float64(wait) * (1 + retryJitter*rand.Float64()))
		t := clk.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C():
		}
		wait = time.Duration(float64(wait) * retryFactor)
	}
}

// retryable: the API server could not answer now (unreachable, overloaded,
// internal error), as opposed to an answer.
func retryable(err error) bool {
	var netErr net.Error
	switch {
	case apierrors.IsInternalError(err), apierrors.IsServerTimeout(err), apierrors.IsTooManyRequests(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsTimeout(err), apierrors.IsUnexpectedServerError(err):
		return true
	case errors.As(err, &netErr):
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Code >= 500
	}
	return false
}

// ttlCache maps keys to values until they expire; at most maxCached
// entries (expired ones go first when full, then any).
type ttlCache[V any] struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	m     map[[sha256.Size]byte]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v       V
	expires time.Time
}

func newTTLCache[V any](clk clock.PassiveClock) *ttlCache[V] {
	return &ttlCache[V]{clock: clk, m: map[[sha256.Size]byte]ttlEntry[V]{}}
}

func (c *ttlCache[V]) get(key [sha256.Size]byte) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || !c.clock.Now().Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *ttlCache[V]) put(key [sha256.Size]byte, v V, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if _, ok := c.m[key]; !ok && len(c.m) >= maxCached {
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
		for k := range c.m {
			if len(c.m) < maxCached {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[key] = ttlEntry[V]{v: v, expires: now.Add(ttl)}
}

// tokenReviewer authenticates bearer tokens with TokenReviews. Answers,
// authenticated or not, are cached for ttl by the token's SHA-256 (the
// token itself is not kept); failed reviews are not cached.
type tokenReviewer struct {
	client  kubeclient.TokenReviewInterface
	clock   clock.WithTicker
	timeout time.Duration
	ttl     time.Duration
	cache   *ttlCache[*authenticator.Response] // nil: not authenticated
}

var _ authenticator.Token = (*tokenReviewer)(nil)

func (t *tokenReviewer) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	key := sha256.Sum256([]byte(token))
	if resp, ok := t.cache.get(key); ok {
		return resp, resp != nil, nil
	}
	var got *authenticationv1.TokenReview
	err := review(ctx, t.clock, t.timeout, func(ctx context.Context) error {
		var err error
		got, err = t.client.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("token review: %w", err)
	}
	st := got.Status
	if st.Error != "" {
		klog.FromContext(ctx).V(2).Info("Token review answered with an error", "err", st.Error)
	}
	var resp *authenticator.Response
	if st.Authenticated {
		u := &user.DefaultInfo{Name: st.User.Username, UID: st.User.UID, Groups: st.User.Groups}
		if len(st.User.Extra) > 0 {
			u.Extra = make(map[string][]string, len(st.User.Extra))
			for k, v := range st.User.Extra {
				u.Extra[k] = v
			}
		}
		resp = &authenticator.Response{User: u, Audiences: st.Audiences}
	}
	t.cache.put(key, resp, t.ttl)
	return resp, resp != nil, nil
}

// sarAuthorizer authorizes with SubjectAccessReviews, caching allowed
// decisions for allowTTL and the others for denyTTL, by the review asked.
type sarAuthorizer struct {
	client            kubeclient.SubjectAccessReviewInterface
	clock             clock.WithTicker
	timeout           time.Duration
	allowTTL, denyTTL time.Duration
	cache             *ttlCache[sarDecision]
}

type sarDecision struct {
	decision authorizer.Decision
	reason   string
}

var _ authorizer.Authorizer = (*sarAuthorizer)(nil)

func (a *sarAuthorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	spec := sarSpec(attrs)
	b, err := json.Marshal(spec)
	if err != nil {
		return authorizer.DecisionNoOpinion, "", fmt.Errorf("subject access review: %w", err)
	}
	key := sha256.Sum256(b)
	if d, ok := a.cache.get(key); ok {
		return d.decision, d.reason, nil
	}
	var got *authorizationv1.SubjectAccessReview
	err = review(ctx, a.clock, a.timeout, func(ctx context.Context) error {
		got, err = a.client.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return authorizer.DecisionNoOpinion, "", fmt.Errorf("subject access review: %w", err)
	}
	st := got.Status
	if st.EvaluationError != "" {
		klog.FromContext(ctx).V(2).Info("Subject access review answered with an evaluation error", "err", st.EvaluationError)
	}
	d := sarDecision{decision: authorizer.DecisionNoOpinion, reason: st.Reason}
	ttl := a.denyTTL
	switch {
	case st.Allowed:
		d.decision, ttl = authorizer.DecisionAllow, a.allowTTL
	case st.Denied:
		d.decision = authorizer.DecisionDeny
	}
	a.cache.put(key, d, ttl)
	return d.decision, d.reason, nil
}

// sarSpec is the review of attrs, as the apiserver's webhook authorizer
// asks it.
func sarSpec(attrs authorizer.Attributes) authorizationv1.SubjectAccessReviewSpec {
	var spec authorizationv1.SubjectAccessReviewSpec
	if u := attrs.GetUser(); u != nil {
		spec.User, spec.UID, spec.Groups = u.GetName(), u.GetUID(), u.GetGroups()
		if extra := u.GetExtra(); len(extra) > 0 {
			spec.Extra = make(map[string]authorizationv1.ExtraValue, len(extra))
			for k, v := range extra {
				spec.Extra[k] = v
			}
		}
	}
	if attrs.IsResourceRequest() {
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace: attrs.GetNamespace(), Verb: attrs.GetVerb(), Group: attrs.GetAPIGroup(), Version: attrs.GetAPIVersion(),
			Resource: attrs.GetResource(), Subresource: attrs.GetSubresource(), Name: attrs.GetName(),
		}
	} else {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: attrs.GetPath(), Verb: attrs.GetVerb()}
	}
	return spec
}
