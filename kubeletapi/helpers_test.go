package kubeletapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/kubeletapi/kubeletapitest"
)

const (
	nodeName = "node-1"
	podNS    = "ns"
	podName  = "p"
	podUID   = "uid-1"
)

// testPod is ns/p with containers c and c2, init container init and an
// ephemeral container debug.
func testPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: podNS, Name: podName, UID: podUID},
		Spec: v1.PodSpec{
			Containers:          []v1.Container{{Name: "c"}, {Name: "c2"}},
			InitContainers:      []v1.Container{{Name: "init"}},
			EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}},
		},
	}
}

// headerAuthenticator authenticates "Authorization: Bearer <user>" as
// <user> in group "testers", and nothing else.
type headerAuthenticator struct{}

func (headerAuthenticator) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	name, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || name == "" {
		return nil, false, nil
	}
	if name == "broken" {
		return nil, false, io.ErrUnexpectedEOF
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: name, Groups: []string{"testers"}}}, true, nil
}

// recordingAuthorizer records every attribute it is asked about and allows
// those whose subresource is in allow (every one when allow is nil).
type recordingAuthorizer struct {
	mu    sync.Mutex
	allow map[string]bool
	err   error
	attrs []authorizer.Attributes
}

func (a *recordingAuthorizer) Authorize(_ context.Context, attr authorizer.Attributes) (authorizer.Decision, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.attrs = append(a.attrs, attr)
	if a.err != nil {
		return authorizer.DecisionNoOpinion, "", a.err
	}
	if a.allow == nil || a.allow[attr.GetSubresource()] {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (a *recordingAuthorizer) recorded() []authorizer.Attributes {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]authorizer.Attributes(nil), a.attrs...)
}

// fakes are the test doubles a server is built over.
type fakes struct {
	pods     *kubeletapitest.PodLister
	logs     *kubeletapitest.LogSource
	streamer *kubeletapitest.Streamer
	runner   *kubeletapitest.Runner
	summary  *kubeletapitest.SummaryProvider
}

// baseConfig returns a valid Config over new fakes, anonymous and
// AlwaysAllow, serving the shared test certificate.
func baseConfig() (kubeletapi.Config, *fakes) {
	f := &fakes{
		pods:     kubeletapitest.NewPodLister(testPod()),
		logs:     &kubeletapitest.LogSource{},
		streamer: &kubeletapitest.Streamer{},
		runner:   &kubeletapitest.Runner{},
		summary:  &kubeletapitest.SummaryProvider{},
	}
	return kubeletapi.Config{
		NodeName:    nodeName,
		TLSCertFile: servingCertFile,
		TLSKeyFile:  servingKeyFile,
		Addr:        "127.0.0.1:0",
		Auth:        kubeletapi.AuthConfig{Anonymous: true, AlwaysAllow: true},
		Pods:        f.pods,
		Logs:        f.logs,
		Streaming:   f.streamer,
		Runner:      f.runner,
		Summary:     f.summary,
	}, f
}

// newServer builds a server from baseConfig changed by mutate (may be nil).
func newServer(t *testing.T, mutate func(*kubeletapi.Config)) (*kubeletapi.Server, *fakes) {
	t.Helper()
	cfg, f := baseConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := kubeletapi.New(cfg)
	require.NoError(t, err)
	return srv, f
}

// do serves one request through h and returns the recorded response.
func do(h http.Handler, method, target string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// get is do with GET.
func get(h http.Handler, target string) *httptest.ResponseRecorder {
	return do(h, http.MethodGet, target)
}
