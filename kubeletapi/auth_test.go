package kubeletapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/kubeletapi"
)

func TestSubresources(t *testing.T) {
	tests := []struct {
		path string
		want []string
	}{
		{"/pods", []string{"pods", "proxy"}},
		{"/pods/", []string{"pods", "proxy"}},
		{"/runningpods/", []string{"pods", "proxy"}},
		{"/runningpods", []string{"pods", "proxy"}},
		{"/healthz", []string{"healthz", "proxy"}},
		{"/healthz/ping", []string{"healthz", "proxy"}},
		{"/healthzx", []string{"proxy"}},
		{"/configz", []string{"configz", "proxy"}},
		{"/stats/summary", []string{"stats"}},
		{"/stats", []string{"stats"}},
		{"/statsx", []string{"proxy"}},
		{"/metrics", []string{"metrics"}},
		{"/metrics/resource", []string{"metrics"}},
		{"/metrics/probes", []string{"metrics"}},
		{"/metrics/slis", []string{"metrics"}},
		{"/metricsx", []string{"proxy"}},
		{"/logs/", []string{"log"}},
		{"/logs/kubelet.log", []string{"log"}},
		{"/checkpoint/ns/p/c", []string{"checkpoint"}},
		{"/statusz", []string{"statusz"}},
		{"/containerLogs/ns/p/c", []string{"proxy"}},
		{"/exec/ns/p/c", []string{"proxy"}},
		{"/attach/ns/p/uid/c", []string{"proxy"}},
		{"/portForward/ns/p", []string{"proxy"}},
		{"/run/ns/p/c", []string{"proxy"}},
		{"/", []string{"proxy"}},
		{"", []string{"proxy"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			require.Equal(t, tt.want, kubeletapi.Subresources(tt.path))
		})
	}
}

func TestAttributes(t *testing.T) {
	u := &user.DefaultInfo{Name: "alice", Groups: []string{"admins"}}
	tests := []struct {
		method, path string
		verb         string
		subs         []string
	}{
		{http.MethodGet, "/pods", "get", []string{"pods", "proxy"}},
		{http.MethodPost, "/exec/ns/p/c", "create", []string{"proxy"}},
		{http.MethodPut, "/stats/summary", "update", []string{"stats"}},
		{http.MethodPatch, "/metrics", "patch", []string{"metrics"}},
		{http.MethodDelete, "/logs/x", "delete", []string{"log"}},
		{http.MethodHead, "/healthz", "", []string{"healthz", "proxy"}},
		{http.MethodOptions, "/configz", "", []string{"configz", "proxy"}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.path, nil)
			attrs := kubeletapi.Attributes(nodeName, u, r)
			require.Len(t, attrs, len(tt.subs))
			for i, a := range attrs {
				require.Equal(t, authorizer.AttributesRecord{
					User: u, Verb: tt.verb, APIVersion: "v1", Resource: "nodes", Subresource: tt.subs[i],
					Name: nodeName, ResourceRequest: true, Path: tt.path,
				}, a)
			}
		})
	}
}

func TestUnauthenticated(t *testing.T) {
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.Auth.Anonymous = false
		c.Authenticator = headerAuthenticator{}
	})
	h := srv.Handler()
	for _, path := range []string{"/healthz", "/pods", "/containerLogs/ns/p/c", "/nope"} {
		w := get(h, path)
		require.Equal(t, http.StatusUnauthorized, w.Code, path)
		require.Equal(t, "Unauthorized\n", w.Body.String(), path)
	}
	// An authenticator error is a 401 too.
	w := do(h, http.MethodGet, "/pods", "Authorization", "Bearer broken")
	require.Equal(t, http.StatusUnauthorized, w.Code)

	w = do(h, http.MethodGet, "/pods", "Authorization", "Bearer alice")
	require.Equal(t, http.StatusOK, w.Code)
}

func TestForbidden(t *testing.T) {
	tests := []struct {
		method, path string
		want         string
	}{
		{http.MethodGet, "/pods", "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[pods proxy])\n"},
		{http.MethodGet, "/healthz", "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[healthz proxy])\n"},
		{http.MethodGet, "/logs/kubelet.log", "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[log])\n"},
		{http.MethodGet, "/stats/summary", "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[stats])\n"},
		{http.MethodGet, "/metrics/resource", "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[metrics])\n"},
		{http.MethodGet, "/containerLogs/ns/p/c", "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[proxy])\n"},
		{http.MethodPost, "/exec/ns/p/c?output=1", "Forbidden (user=alice, verb=create, resource=nodes, subresource(s)=[proxy])\n"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			authz := &recordingAuthorizer{allow: map[string]bool{}}
			srv, f := newServer(t, func(c *kubeletapi.Config) {
				c.Authenticator = headerAuthenticator{}
				c.Authorizer = authz
			})
			w := do(srv.Handler(), tt.method, tt.path, "Authorization", "Bearer alice")
			require.Equal(t, http.StatusForbidden, w.Code)
			require.Equal(t, tt.want, w.Body.String())
			require.Empty(t, f.streamer.Calls())
			require.Len(t, authz.recorded(), len(kubeletapi.Subresources(httptest.NewRequest(tt.method, tt.path, nil).URL.Path)))
		})
	}
}

func TestAuthorizeFallsBackToProxy(t *testing.T) {
	for _, allowed := range []string{"pods", "proxy"} {
		t.Run(allowed, func(t *testing.T) {
			authz := &recordingAuthorizer{allow: map[string]bool{allowed: true}}
			srv, _ := newServer(t, func(c *kubeletapi.Config) {
				c.Authenticator = headerAuthenticator{}
				c.Authorizer = authz
			})
			w := do(srv.Handler(), http.MethodGet, "/pods", "Authorization", "Bearer alice")
			require.Equal(t, http.StatusOK, w.Code)
			var subs []string
			for _, a := range authz.recorded() {
				subs = append(subs, a.GetSubresource())
				require.Equal(t, "alice", a.GetUser().GetName())
				require.Equal(t, nodeName, a.GetName())
			}
			if allowed == "pods" {
				require.Equal(t, []string{"pods"}, subs, "the fine-grained subresource is asked first")
			} else {
				require.Equal(t, []string{"pods", "proxy"}, subs)
			}
		})
	}
}

func TestAuthorizationError(t *testing.T) {
	authz := &recordingAuthorizer{err: errors.New("webhook down")}
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.Authenticator = headerAuthenticator{}
		c.Authorizer = authz
	})
	w := do(srv.Handler(), http.MethodGet, "/pods", "Authorization", "Bearer alice")
	require.Equal(t, http.StatusInternalServerError, w.Code)
	require.Equal(t, "Authorization error (user=alice, verb=get, resource=nodes, subresource=pods)\n", w.Body.String())
	require.Len(t, authz.recorded(), 1, "an error stops the fallback")
}

func TestMultiNodeAuthorizesAllNodes(t *testing.T) {
	authz := &recordingAuthorizer{}
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.NodeName = ""
		c.MultiNode = true
		c.Authorizer = authz
	})
	w := get(srv.Handler(), "/stats/summary")
	require.Equal(t, http.StatusOK, w.Code)
	attrs := authz.recorded()
	require.Len(t, attrs, 1)
	require.Equal(t, "", attrs[0].GetName())
	require.Equal(t, "stats", attrs[0].GetSubresource())
	require.Equal(t, user.Anonymous, attrs[0].GetUser().GetName())
}

// TestCredentialsAreStripped checks that handlers see the user, not the
// bearer token.
func TestCredentialsAreStripped(t *testing.T) {
	var (
		got      string
		gotUser  user.Info
		gotFound bool
	)
	srv, f := newServer(t, func(c *kubeletapi.Config) { c.Authenticator = headerAuthenticator{} })
	f.streamer.SetHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		gotUser, gotFound = kubeletapi.UserFrom(r.Context())
	}))
	w := do(srv.Handler(), http.MethodPost, "/exec/ns/p/c?output=1", "Authorization", "Bearer alice")
	require.Equal(t, http.StatusOK, w.Code)
	require.Empty(t, got)
	require.True(t, gotFound)
	require.Equal(t, "alice", gotUser.GetName())

	_, ok := kubeletapi.UserFrom(context.Background())
	require.False(t, ok)
}

// TestDelegatedAuth goes through the staging TokenReview authenticator
// and SubjectAccessReview authorizer, answered by a fake API server.
func TestDelegatedAuth(t *testing.T) {
	defer goleak.VerifyNone(t)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			var tr authenticationv1.TokenReview
			if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if tr.Spec.Token == "good" {
				tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true,
					User: authenticationv1.UserInfo{Username: "bob", Groups: []string{"devs"}}}
			}
			_ = json.NewEncoder(w).Encode(&tr)
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			var sar authorizationv1.SubjectAccessReview
			if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			ra := sar.Spec.ResourceAttributes
			sar.Status.Allowed = sar.Spec.User == "bob" && ra != nil && ra.Resource == "nodes" &&
				ra.Subresource == "stats" && ra.Name == nodeName && ra.Verb == "get"
			_ = json.NewEncoder(w).Encode(&sar)
		default:
			http.NotFound(w, r)
		}
	}))
	defer api.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: api.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	require.NoError(t, err)
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.Auth = kubeletapi.AuthConfig{TokenReview: clientset.Wrap(cs), SubjectAccessReview: clientset.Wrap(cs)}
	})
	h := srv.Handler()

	require.Equal(t, http.StatusUnauthorized, get(h, "/stats/summary").Code)
	require.Equal(t, http.StatusUnauthorized, do(h, http.MethodGet, "/stats/summary", "Authorization", "Bearer bad").Code)
	require.Equal(t, http.StatusOK, do(h, http.MethodGet, "/stats/summary", "Authorization", "Bearer good").Code)
	w := do(h, http.MethodGet, "/pods", "Authorization", "Bearer good")
	require.Equal(t, http.StatusForbidden, w.Code)
	require.Equal(t, "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[pods proxy])\n", w.Body.String())
}
