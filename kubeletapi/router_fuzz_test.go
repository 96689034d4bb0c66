package kubeletapi_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nodekit/nodekit/kubeletapi"
)

// FuzzRouter sends any method, path and query to the authenticated API as
// an anonymous client, as a user the authorizer refuses everything, and as
// one it allows everything. Neither of the first two ever reaches the
// host's pods, logs, streams, runner or stats; none makes the server
// panic or answer outside 1xx–5xx.
func FuzzRouter(f *testing.F) {
	for _, seed := range []struct{ method, path, query string }{
		{"GET", "/pods", ""},
		{"POST", "/run/ns/p/c", "cmd=id"},
		{"POST", "/exec/ns/p/c", "command=id&stdout=1"},
		{"GET", "/containerLogs/ns/p/c", "follow=true&tailLines=1"},
		{"GET", "/pods/../exec/ns/p/c", ""},
		{"GET", "/%2e%2e/run/ns/p/c", ""},
		{"GET", "//stats/summary", ""},
		{"GET", "/stats/summary", "only_cpu_and_memory=true"},
		{"POST", "/portForward/ns/p", "port=80"},
		{"GET", "/attach/ns/p/c", "stdin=1"},
		{"PUT", "/configz", ""},
		{"GET", "/metrics/probes", ""},
		{"DELETE", "/metrics/slis", ""},
		{"GET", "/logs/../../etc/passwd", ""},
		{"DELETE", "/healthz", "verbose"},
	} {
		f.Add(seed.method, seed.path, seed.query)
	}
	f.Fuzz(func(t *testing.T, method, path, query string) {
		if !validMethod(method) || !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n\x00#?") || strings.ContainsAny(query, " \r\n\x00#") {
			t.Skip("not a request line net/http would parse")
		}
		u := &url.URL{Path: path, RawQuery: query}
		if _, err := url.ParseRequestURI(u.String()); err != nil {
			t.Skip()
		}
		for _, who := range []string{"", "mallory", "admin"} {
			authz := &recordingAuthorizer{allow: map[string]bool{}}
			if who == "admin" {
				authz.allow = nil // everything
			}
			srv, fk := newServer(t, func(c *kubeletapi.Config) {
				c.Authenticator, c.Authorizer = headerAuthenticator{}, authz
			})
			r := httptest.NewRequest(method, u.String(), nil)
			if who != "" {
				r.Header.Set("Authorization", "Bearer "+who)
			}
			w := httptest.NewRecorder()
			srv.Handler().ServeHTTP(w, r)
			require.GreaterOrEqual(t, w.Code, 100)
			require.Less(t, w.Code, 600)
			if who == "admin" {
				continue
			}
			require.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, w.Code, "%s %s as %q", method, u, who)
			require.Empty(t, fk.runner.Calls())
			require.Empty(t, fk.streamer.Calls())
			require.Empty(t, fk.logs.Calls())
			require.Zero(t, fk.summary.Calls())
			require.Zero(t, fk.pods.Calls())
		}
	})
}

func validMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return true
	}
	return false
}
