package volumes

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// A token is refreshed once 80% of its lifetime has passed, or after a
// day, whichever comes first (the kubelet's token manager rule).
const (
	tokenRefreshFraction = 0.8
	tokenMaxAge          = 24 * time.Hour
)

// tokenCache requests service account tokens bound to pods (TokenRequest
// as the node identity) and reuses each until it is due for refresh.
type tokenCache struct {
	client kubernetes.Interface
	clock  clock.PassiveClock

	mu     sync.Mutex
	tokens map[string]*authenticationv1.TokenRequest
}

func newTokenCache(client kubernetes.Interface, clk clock.PassiveClock) *tokenCache {
	return &tokenCache{client: client, clock: clk, tokens: map[string]*authenticationv1.TokenRequest{}}
}

func tokenKey(pod *v1.Pod, sa string, src *v1.ServiceAccountTokenProjection) string {
	exp := int64(0)
	if src.ExpirationSeconds != nil {
		exp = *src.ExpirationSeconds
	}
	return fmt.Sprintf("%s/%s/%s/%d/%s", pod.Namespace, sa, src.Audience, exp, pod.UID)
}

// token returns a valid token for the pod's service account with the
// projection's audience and expiration.
func (t *tokenCache) token(ctx context.Context, pod *v1.Pod, src *v1.ServiceAccountTokenProjection) (string, error) {
	if t.client == nil {
		return "", fmt.Errorf("cannot request a service account token without an API server")
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	key := tokenKey(pod, sa, src)
	t.mu.Lock()
	tr := t.tokens[key]
	t.mu.Unlock()
	if tr != nil && !t.due(tr) {
		return tr.Status.Token, nil
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	got, err := t.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		if tr != nil && t.clock.Now().Before(tr.Status.ExpirationTimestamp.Time) {
			return tr.Status.Token, nil // refresh failed: the old token is still good
		}
		return "", fmt.Errorf("failed to fetch token: %w", err)
	}
	if got.Spec.ExpirationSeconds == nil {
		got.Spec.ExpirationSeconds = req.Spec.ExpirationSeconds
	}
	t.mu.Lock()
	t.tokens[key] = got
	t.mu.Unlock()
	return got.Status.Token, nil
}

// due reports whether a token should be refreshed.
func (t *tokenCache) due(tr *authenticationv1.TokenRequest) bool {
	if tr.Spec.ExpirationSeconds == nil {
		return false // no lifetime to measure; as the kubelet, keep it
	}
	now := t.clock.Now()
	exp := tr.Status.ExpirationTimestamp.Time
	ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	issued := exp.Add(-ttl)
	return now.After(issued.Add(time.Duration(float64(ttl)*tokenRefreshFraction))) || now.After(issued.Add(tokenMaxAge))
}

// forget drops the tokens bound to a pod.
func (t *tokenCache) forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.tokens {
		if strings.HasSuffix(k, "/"+string(uid)) {
			delete(t.tokens, k)
		}
	}
}
