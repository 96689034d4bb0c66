package agent

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const standalonePod = `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers: [{name: c, image: registry.example.com/busybox:1.37}]
`

// standalone builds a standalone agent on the simulator with one static
// pod, its listeners on free loopback ports, changed by mutate.
func standalone(t *testing.T, mutate func(*Options)) (*Agent, error) {
	t.Helper()
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.Mkdir(manifests, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(manifests, "web.yaml"), []byte(standalonePod), 0o644))
	opts := Options{NodeName: "n1", PodManifestPath: manifests, StateDir: filepath.Join(dir, "state"), HealthzAddr: "127.0.0.1:0"}
	if mutate != nil {
		mutate(&opts)
	}
	return New(context.Background(), opts)
}

// run runs a until the test ends.
func run(t *testing.T, a *Agent) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestHealthzListenerServesHealthzOnly(t *testing.T) {
	a, err := standalone(t, nil)
	require.NoError(t, err)
	require.Len(t, a.listeners, 1, "healthz only: no API, no read-only port")
	addr := a.listeners[0].Addr().String()
	run(t, a)
	require.Eventually(t, func() bool {
		code, body := httpGet(t, "http://"+addr+"/healthz")
		return code == http.StatusOK && body == "ok"
	}, 10*time.Second, 10*time.Millisecond, "healthy once the PLEG relisted")
	for _, path := range []string{"/pods", "/stats/summary", "/metrics", "/metrics/probes", "/metrics/resource", "/configz"} {
		code, _ := httpGet(t, "http://"+addr+path)
		require.Equal(t, http.StatusNotFound, code, path)
	}
}

func TestReadOnlyPortOnlyWhenAsked(t *testing.T) {
	a, err := standalone(t, func(o *Options) { o.ReadOnlyAddr = "127.0.0.1:0" })
	require.NoError(t, err)
	require.Len(t, a.listeners, 2)
	readOnly := a.listeners[1].Addr().String()
	run(t, a)
	code, body := httpGet(t, "http://"+readOnly+"/pods")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `"kind":"PodList"`)
}

func TestAnonymousOnLoopbackAndConfigz(t *testing.T) {
	a, err := standalone(t, func(o *Options) {
		o.APIAddr, o.AnonymousAuth, o.AuthorizationMode = "127.0.0.1:0", true, AuthorizationAlwaysAllow
	})
	require.NoError(t, err)
	api := a.listeners[0].Addr().String()
	run(t, a)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test server
	resp, err := c.Get("https://" + api + "/configz")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	raw, _ := io.ReadAll(resp.Body)
	body := string(raw)
	var cz struct {
		Config struct {
			Authentication struct {
				Webhook   struct{ Enabled bool } `json:"webhook"`
				Anonymous struct{ Enabled bool } `json:"anonymous"`
			} `json:"authentication"`
		} `json:"kubeletconfig"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &cz))
	require.False(t, cz.Config.Authentication.Webhook.Enabled, "no TokenReview standalone")
	require.True(t, cz.Config.Authentication.Anonymous.Enabled)
}

func TestOpenAPIRefused(t *testing.T) {
	for _, tc := range []struct {
		addr, mode string
		refused    bool
	}{
		{"0.0.0.0:10250", "", true},
		{":10250", AuthorizationAlwaysAllow, true},
		{"10.0.0.1:10250", AuthorizationAlwaysAllow, true},
		{"127.0.0.1:10250", "", false},
		{"[::1]:10250", AuthorizationAlwaysAllow, false},
		{"localhost:10250", "", false},
	} {
		o := Options{NodeName: "n1", PodManifestPath: "/m", APIAddr: tc.addr, AnonymousAuth: true, AuthorizationMode: tc.mode}
		err := o.Validate()
		if !tc.refused {
			require.NoError(t, err, tc.addr)
			continue
		}
		require.ErrorIs(t, err, ErrOpenAPI, tc.addr)
		require.ErrorContains(t, err, "--address 127.0.0.1")
		require.ErrorContains(t, err, "--client-ca-file")
	}
	// Authenticated clients only: any address.
	o := Options{NodeName: "n1", PodManifestPath: "/m", APIAddr: "0.0.0.0:10250", ClientCAFile: "/ca.crt", AuthorizationMode: AuthorizationAlwaysAllow}
	require.NoError(t, o.Validate())
}

func TestPortClashFailsNew(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	_, err = standalone(t, func(o *Options) { o.HealthzAddr = taken.Addr().String() })
	require.ErrorContains(t, err, "agent: healthz: listen tcp "+taken.Addr().String())
	require.Equal(t, 1, strings.Count(err.Error(), "agent:"), "one prefix: %v", err)
}

func TestPodLogDirectoryMode(t *testing.T) {
	a, err := standalone(t, nil)
	require.NoError(t, err)
	run(t, a)
	var dirs []os.DirEntry
	require.Eventually(t, func() bool {
		dirs, _ = os.ReadDir(a.opts.PodLogsDir)
		return len(dirs) == 1
	}, 10*time.Second, 10*time.Millisecond)
	for _, dir := range []string{a.opts.PodLogsDir, filepath.Join(a.opts.PodLogsDir, dirs[0].Name())} {
		st, err := os.Stat(dir)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o750), st.Mode().Perm(), dir)
	}
}
