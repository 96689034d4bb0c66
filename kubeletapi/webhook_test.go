package kubeletapi

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// reviews counts the creates of resource and answers each with answer.
func reviews(cs *fake.Clientset, resource string, answer func(obj runtime.Object) (runtime.Object, error)) *atomic.Int32 {
	var n atomic.Int32
	cs.PrependReactor("create", resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		n.Add(1)
		obj, err := answer(a.(k8stesting.CreateAction).GetObject())
		return true, obj, err
	})
	return &n
}

func TestTokenReviewerCachesAnswersNotErrors(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := context.Background()
	cs := fake.NewClientset()
	failing := false
	n := reviews(cs, "tokenreviews", func(obj runtime.Object) (runtime.Object, error) {
		if failing {
			return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "tokenreviews"}, "", fmt.Errorf("no"))
		}
		tr := obj.(*authenticationv1.TokenReview).DeepCopy()
		if tr.Spec.Token == "good" {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
				Username: "bob", UID: "1", Groups: []string{"devs"}, Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}}
		}
		return tr, nil
	})
	clk := clocktesting.NewFakeClock(epoch)
	tr := &tokenReviewer{client: cs.AuthenticationV1().TokenReviews(), clock: clk, timeout: time.Second, ttl: time.Minute,
		cache: newTTLCache[*authenticator.Response](clk)}

	resp, ok, err := tr.AuthenticateToken(ctx, "good")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, &user.DefaultInfo{Name: "bob", UID: "1", Groups: []string{"devs"}, Extra: map[string][]string{"k": {"v"}}}, resp.User)
	_, ok, err = tr.AuthenticateToken(ctx, "bad")
	require.NoError(t, err)
	require.False(t, ok)
	require.EqualValues(t, 2, n.Load())

	// Both answers are cached until the TTL passes.
	clk.Step(59 * time.Second)
	_, ok, _ = tr.AuthenticateToken(ctx, "good")
	require.True(t, ok)
	_, ok, _ = tr.AuthenticateToken(ctx, "bad")
	require.False(t, ok)
	require.EqualValues(t, 2, n.Load())
	clk.Step(time.Second)
	_, ok, _ = tr.AuthenticateToken(ctx, "good")
	require.True(t, ok)
	require.EqualValues(t, 3, n.Load())

	// A failed review is an error, not cached, and a refusal is not retried.
	failing = true
	for range 2 {
		_, ok, err = tr.AuthenticateToken(ctx, "other")
		require.Error(t, err)
		require.False(t, ok)
	}
	require.EqualValues(t, 5, n.Load())
}

func TestReviewRetriesTransientErrorsOnTheClock(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := clocktesting.NewFakeClock(epoch)
	calls := 0
	done := make(chan error, 1)
	go func() {
		done <- review(context.Background(), clk, time.Minute, func(context.Context) error {
			calls++
			if calls < 3 {
				return apierrors.NewInternalError(fmt.Errorf("etcd"))
			}
			return nil
		})
	}()
	// The review's timeout and a back-off timer wait on the clock: two
	// back-offs of at most 0.6s and 0.9s.
	backingOff := func() bool { return clk.Waiters() == 2 }
	for range 2 {
		require.Eventually(t, backingOff, 5*time.Second, time.Millisecond)
		clk.Step(time.Second)
	}
	require.NoError(t, <-done)
	require.Equal(t, 3, calls)

	// A transient error every time: five attempts, then the error. The
	// fourth back-off is up to 1.6875s × 1.2 = 2.025s: each step covers
	// the longest.
	calls = 0
	go func() {
		done <- review(context.Background(), clk, time.Minute, func(context.Context) error {
			calls++
			return apierrors.NewServiceUnavailable("busy")
		})
	}()
	for range 4 {
		require.Eventually(t, backingOff, 5*time.Second, time.Millisecond)
		clk.Step(3 * time.Second)
	}
	require.True(t, apierrors.IsServiceUnavailable(<-done))
	require.Equal(t, retryAttempts, calls)
}

func TestSARAuthorizerCachesByDecision(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := context.Background()
	cs := fake.NewClientset()
	var asked []authorizationv1.SubjectAccessReviewSpec
	n := reviews(cs, "subjectaccessreviews", func(obj runtime.Object) (runtime.Object, error) {
		sar := obj.(*authorizationv1.SubjectAccessReview).DeepCopy()
		asked = append(asked, sar.Spec)
		switch sar.Spec.ResourceAttributes.Subresource {
		case "stats":
			sar.Status.Allowed = true
		case "proxy":
			sar.Status.Denied, sar.Status.Reason = true, "never"
		}
		return sar, nil
	})
	clk := clocktesting.NewFakeClock(epoch)
	a := &sarAuthorizer{client: cs.AuthorizationV1().SubjectAccessReviews(), clock: clk, timeout: time.Second,
		allowTTL: 5 * time.Minute, denyTTL: 30 * time.Second, cache: newTTLCache[sarDecision](clk)}
	u := &user.DefaultInfo{Name: "bob", UID: "1", Groups: []string{"devs"}, Extra: map[string][]string{"k": {"v"}}}
	attrs := func(sub string) authorizer.Attributes {
		return authorizer.AttributesRecord{User: u, Verb: "get", APIVersion: "v1", Resource: "nodes", Subresource: sub, Name: "n", ResourceRequest: true}
	}
	decide := func(sub string) (authorizer.Decision, string) {
		d, reason, err := a.Authorize(ctx, attrs(sub))
		require.NoError(t, err)
		return d, reason
	}
	d, _ := decide("stats")
	require.Equal(t, authorizer.DecisionAllow, d)
	d, reason := decide("proxy")
	require.Equal(t, authorizer.DecisionDeny, d)
	require.Equal(t, "never", reason)
	d, _ = decide("pods")
	require.Equal(t, authorizer.DecisionNoOpinion, d)
	require.EqualValues(t, 3, n.Load())
	require.Equal(t, authorizationv1.SubjectAccessReviewSpec{User: "bob", UID: "1", Groups: []string{"devs"},
		Extra:              map[string]authorizationv1.ExtraValue{"k": {"v"}},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Version: "v1", Resource: "nodes", Subresource: "stats", Name: "n"}}, asked[0])

	// Allowed answers last 5 minutes, the others 30 seconds.
	clk.Step(30 * time.Second)
	decide("stats")
	decide("proxy")
	decide("pods")
	require.EqualValues(t, 5, n.Load())
	clk.Step(5 * time.Minute)
	decide("stats")
	require.EqualValues(t, 6, n.Load())
}

func TestTTLCacheIsBounded(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	c := newTTLCache[int](clk)
	for i := range maxCached + 10 {
		c.put(sha256.Sum256(fmt.Appendf(nil, "%d", i)), i, time.Minute)
	}
	require.Len(t, c.m, maxCached)
	v, ok := c.get(sha256.Sum256(fmt.Appendf(nil, "%d", maxCached+9)))
	require.True(t, ok, "the newest entry is kept")
	require.Equal(t, maxCached+9, v)
}
