package kubeclient_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/nodekit/nodekit/kubeclient"
)

// TestMain checks that nothing is left running once every test's server
// has closed its connections.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// request is what the fake server saw.
type request struct {
	method, path, query, accept, contentType, body string
}

// server answers every request with reply's object as JSON and records it.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	seen []request
}

func newServer(t *testing.T, reply func(r *http.Request) any) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.seen = append(s.seen, request{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Accept"),
			r.Header.Get("Content-Type"), string(body)})
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(reply(r))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) last() request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[len(s.seen)-1]
}

func newClient(t *testing.T, s *server) *kubeclient.Client {
	c, err := kubeclient.NewForConfig(&rest.Config{Host: s.URL})
	require.NoError(t, err)
	return c
}

func TestClientRequests(t *testing.T) {
	s := newServer(t, func(r *http.Request) any {
		switch {
		case strings.Contains(r.URL.Path, "/pods") && strings.HasSuffix(r.URL.Path, "/pods"):
			return &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
				ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p"}}}}
		case strings.Contains(r.URL.Path, "/pods/"):
			if r.Method == http.MethodDelete {
				return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess}
			}
			return &v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
		case strings.Contains(r.URL.Path, "/nodes"):
			return &v1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u"}}
		case strings.Contains(r.URL.Path, "/leases"):
			return &coordinationv1.Lease{TypeMeta: metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
				ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "3"}}
		case strings.HasSuffix(r.URL.Path, "/tokenreviews"):
			return &authenticationv1.TokenReview{TypeMeta: metav1.TypeMeta{Kind: "TokenReview", APIVersion: "authentication.k8s.io/v1"},
				Status: authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice"}}}
		default:
			return &authorizationv1.SubjectAccessReview{TypeMeta: metav1.TypeMeta{Kind: "SubjectAccessReview", APIVersion: "authorization.k8s.io/v1"},
				Status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}}
		}
	})
	c := newClient(t, s)
	ctx := context.Background()

	pod, err := c.Pods("ns").Get(ctx, "p", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "p", pod.Name)
	got := s.last()
	require.Equal(t, "/api/v1/namespaces/ns/pods/p", got.path)
	require.Contains(t, got.accept, "application/vnd.kubernetes.protobuf", "built-in types prefer protobuf, as client-go's")

	list, err := c.Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n", ResourceVersion: "0"})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	got = s.last()
	require.Equal(t, "/api/v1/pods", got.path)
	require.Contains(t, got.query, "fieldSelector=spec.nodeName%3Dn")
	require.Contains(t, got.query, "resourceVersion=0")

	_, err = c.Pods("ns").Patch(ctx, "p", types.StrategicMergePatchType, []byte(`{"status":{}}`), metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	got = s.last()
	require.Equal(t, []string{http.MethodPatch, "/api/v1/namespaces/ns/pods/p/status", "application/strategic-merge-patch+json", `{"status":{}}`},
		[]string{got.method, got.path, got.contentType, got.body})

	require.NoError(t, c.Pods("ns").Delete(ctx, "p", metav1.DeleteOptions{}))
	require.Equal(t, http.MethodDelete, s.last().method)

	node, err := c.Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Equal(t, types.UID("u"), node.UID)
	got = s.last()
	require.Equal(t, []string{http.MethodPost, "/api/v1/nodes"}, []string{got.method, got.path})
	require.Equal(t, "application/vnd.kubernetes.protobuf", got.contentType, "bodies of built-in types are protobuf")
	_, err = c.Nodes().Patch(ctx, "n", types.StrategicMergePatchType, []byte(`{}`), metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	require.Equal(t, "/api/v1/nodes/n/status", s.last().path)

	l, err := c.Leases("kube-node-lease").Update(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "2"}}, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Equal(t, "3", l.ResourceVersion)
	got = s.last()
	require.Equal(t, []string{http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n"}, []string{got.method, got.path})

	tr, err := c.TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "t"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Equal(t, "alice", tr.Status.User.Username)
	require.Equal(t, "/apis/authentication.k8s.io/v1/tokenreviews", s.last().path)

	sar, err := c.SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.True(t, sar.Status.Allowed)
	require.Equal(t, "/apis/authorization.k8s.io/v1/subjectaccessreviews", s.last().path)
}

func TestNewForConfigRejectsQPSWithoutBurst(t *testing.T) {
	_, err := kubeclient.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1", QPS: 5})
	require.ErrorContains(t, err, "Burst")
}
