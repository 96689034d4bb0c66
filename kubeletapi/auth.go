package kubeletapi

import (
	"context"
	cryptox509 "crypto/x509"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// buildAuth builds the authenticator and authorizer from cfg as the
// kubelet's delegating configuration does: x509 client certificates, then
// bearer tokens by TokenReview, the authenticated group added, anonymous
// last if enabled; SubjectAccessReviews or always allow.
func buildAuth(cfg *Config) (authenticator.Request, authorizer.Authorizer, error) {
	authn := cfg.Authenticator
	if authn == nil {
		var methods []authenticator.Request
		if cfg.Auth.ClientCAFile != "" {
			caFile, err := newClientCAFile(cfg.Auth.ClientCAFile, cfg.Clock)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: client CA file: %w", ErrInvalidConfig, err)
			}
			methods = append(methods, x509.NewDynamic(caFile.VerifyOptions, x509.CommonNameUserConversion))
		}
		if cfg.Auth.TokenReview != nil {
			methods = append(methods, bearertoken.New(&tokenReviewer{client: cfg.Auth.TokenReview.TokenReviews(),
				clock: cfg.Clock, timeout: cfg.Auth.WebhookTimeout, ttl: cfg.Auth.AuthenticationCacheTTL,
				cache: newTTLCache[*authenticator.Response](cfg.Clock)}))
		}
		authn = group.NewAuthenticatedGroupAdder(union.New(methods...))
		if cfg.Auth.Anonymous {
			authn = union.NewFailOnError(authn, anonymous.NewAuthenticator(nil))
		}
	}
	authz := cfg.Authorizer
	if authz == nil {
		if cfg.Auth.SubjectAccessReview != nil {
			authz = &sarAuthorizer{client: cfg.Auth.SubjectAccessReview.SubjectAccessReviews(), clock: cfg.Clock,
				timeout: cfg.Auth.WebhookTimeout, allowTTL: cfg.Auth.AuthorizationAllowTTL, denyTTL: cfg.Auth.AuthorizationDenyTTL,
				cache: newTTLCache[sarDecision](cfg.Clock)}
		} else {
			authz = alwaysAllow{}
		}
	}
	return authn, authz, nil
}

// alwaysAllow is --authorization-mode=AlwaysAllow.
type alwaysAllow struct{}

func (alwaysAllow) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

// clientCAFile is the client CA bundle of the x509 authenticator, re-read
// when the file changes.
type clientCAFile struct {
	files *reloadingFiles

	mu   sync.RWMutex
	opts cryptox509.VerifyOptions
}

func newClientCAFile(filename string, clk clock.PassiveClock) (*clientCAFile, error) {
	c := &clientCAFile{}
	files, err := newReloadingFiles(clk, c.load, filename)
	if err != nil {
		return nil, err
	}
	c.files = files
	return c, nil
}

// load parses a bundle into the options the apiserver's client-CA content
// gives: its certificates as roots, client authentication required.
func (c *clientCAFile) load(contents [][]byte) error {
	pool, err := certutil.NewPoolFromBytes(contents[0])
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opts = cryptox509.VerifyOptions{Roots: pool, Intermediates: cryptox509.NewCertPool(),
		KeyUsages: []cryptox509.ExtKeyUsage{cryptox509.ExtKeyUsageClientAuth}}
	return nil
}

// VerifyOptions is the x509 authenticator's VerifyOptionFunc: the current
// bundle, after a look at the file.
func (c *clientCAFile) VerifyOptions() (cryptox509.VerifyOptions, bool) {
	_ = c.files.check() // a bad new file keeps the bundle last loaded
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.opts, true
}

// isSubpath reports whether p is path or below it ("/stats" and
// "/stats/summary" are under "/stats/").
func isSubpath(p, path string) bool {
	path = strings.TrimSuffix(path, "/")
	return p == path || (strings.HasPrefix(p, path) && len(p) > len(path) && p[len(path)] == '/')
}

// verbOf maps an HTTP method to the API verb the kubelet authorizes.
func verbOf(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodGet:
		return "get"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}

// Subresources returns the nodes subresources that authorize a request
// path, in the order the kubelet (v1.36, KubeletFineGrainedAuthz on) checks
// them: a fine-grained one first (pods, healthz, configz) with proxy as the
// fallback; stats, metrics and log for their paths; proxy for the rest.
func Subresources(path string) []string {
	var subs []string
	switch {
	case isSubpath(path, "/pods"), isSubpath(path, "/runningpods/"):
		subs = append(subs, "pods")
	case isSubpath(path, "/healthz"):
		subs = append(subs, "healthz")
	case isSubpath(path, "/configz"), isSubpath(path, "/flagz"):
		subs = append(subs, "configz")
	}
	switch {
	case isSubpath(path, "/stats/"):
		return append(subs, "stats")
	case isSubpath(path, "/metrics"):
		return append(subs, "metrics")
	case isSubpath(path, "/logs/"):
		return append(subs, "log")
	case isSubpath(path, "/checkpoint/"):
		return append(subs, "checkpoint")
	case isSubpath(path, "/statusz"):
		return append(subs, "statusz")
	}
	return append(subs, "proxy")
}

// Attributes returns the authorization attributes of a request by u on
// nodes/<nodeName>, one per subresource of Subresources; any allowed one
// admits the request.
func Attributes(nodeName string, u user.Info, r *http.Request) []authorizer.Attributes {
	verb := verbOf(r.Method)
	subs := Subresources(r.URL.Path)
	attrs := make([]authorizer.Attributes, 0, len(subs))
	for _, sub := range subs {
		attrs = append(attrs, authorizer.AttributesRecord{
			User: u, Verb: verb, APIVersion: "v1", Resource: "nodes", Subresource: sub,
			Name: nodeName, ResourceRequest: true, Path: r.URL.Path,
		})
	}
	return attrs
}

// withAuth authenticates and authorizes every request before next, with
// the kubelet's status codes and messages.
func withAuth(nodeName string, authn authenticator.Request, authz authorizer.Authorizer, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logger := klog.FromContext(r.Context())
		info, ok, err := authn.AuthenticateRequest(r)
		if err != nil {
			logger.Error(err, "Unable to authenticate the request due to an error")
		}
		if err != nil || !ok {
			refuse(w, r, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := Attributes(nodeName, info.User, r)
		subs := make([]string, 0, len(attrs))
		for _, attr := range attrs {
			subs = append(subs, attr.GetSubresource())
			decision, _, err := authz.Authorize(r.Context(), attr)
			if err != nil {
				logger.Error(err, "Authorization error", "user", attr.GetUser().GetName(), "verb", attr.GetVerb(), "subresource", attr.GetSubresource())
				refuse(w, r, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)",
					attr.GetUser().GetName(), attr.GetVerb(), attr.GetResource(), attr.GetSubresource()), http.StatusInternalServerError)
				return
			}
			if decision == authorizer.DecisionAllow {
				// The request no longer needs its credentials.
				r.Header.Del("Authorization")
				next.ServeHTTP(w, r.WithContext(withUser(r.Context(), info.User)))
				return
			}
		}
		logger.V(2).Info("Forbidden", "user", info.User.GetName(), "verb", attrs[0].GetVerb(), "subresources", subs)
		refuse(w, r, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=%v)",
			info.User.GetName(), attrs[0].GetVerb(), attrs[0].GetResource(), subs), http.StatusForbidden)
	})
}

// refuse answers a request that will not be served. A request with a body
// also gets "Connection: close" and a read deadline in the past: net/http
// would otherwise read what is left of the body (up to 256 KiB, before
// answering or after), so that the connection can be reused, and a client
// trickling its body would hold the connection and a goroutine without
// ever hearing no.
func refuse(w http.ResponseWriter, r *http.Request, msg string, code int) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w).SetReadDeadline(aLongTimeAgo) // not every ResponseWriter can (tests' recorders)
	}
	http.Error(w, msg, code)
}

// aLongTimeAgo is a deadline in the past: setting it ends pending reads.
var aLongTimeAgo = time.Unix(1, 0)

type userKey struct{}

func withUser(ctx context.Context, u user.Info) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the authenticated user of a request handled by the
// Server (for hosts that audit sessions), or false.
func UserFrom(ctx context.Context) (user.Info, bool) {
	u, ok := ctx.Value(userKey{}).(user.Info)
	return u, ok
}
