package kubeletapi_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/kubeletapi"
)

func TestNewValidation(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("not a certificate"), 0o600))

	tests := []struct {
		name   string
		mutate func(*kubeletapi.Config)
		want   []string // substrings of the error; none: valid
	}{
		{"valid", func(*kubeletapi.Config) {}, nil},
		{"valid multi-node", func(c *kubeletapi.Config) { c.NodeName, c.MultiNode = "", true }, nil},
		{"valid self-signed with the client CA", func(c *kubeletapi.Config) {
			c.TLSCertFile, c.TLSKeyFile = "", ""
			c.Auth = kubeletapi.AuthConfig{ClientCAFile: servingCertFile, AlwaysAllow: true}
		}, nil},
		{"missing NodeName", func(c *kubeletapi.Config) { c.NodeName = "" }, []string{"NodeName is required"}},
		{"NodeName and MultiNode", func(c *kubeletapi.Config) { c.MultiNode = true }, []string{"NodeName and MultiNode are exclusive"}},
		{"missing Pods", func(c *kubeletapi.Config) { c.Pods = nil }, []string{"Pods is required"}},
		{"cert without key", func(c *kubeletapi.Config) { c.TLSKeyFile = "" }, []string{"TLSCertFile and TLSKeyFile must be given together"}},
		{"key without cert", func(c *kubeletapi.Config) { c.TLSCertFile = "" }, []string{"TLSCertFile and TLSKeyFile must be given together"}},
		{"no authentication", func(c *kubeletapi.Config) { c.Auth.Anonymous = false }, []string{"no authentication method"}},
		{"no authorization", func(c *kubeletapi.Config) { c.Auth.AlwaysAllow = false }, []string{"no authorization mode"}},
		{"negative StreamIdleTimeout", func(c *kubeletapi.Config) { c.StreamIdleTimeout = -time.Second }, []string{"StreamIdleTimeout -1s must not be negative"}},
		{"negative StreamCreationTimeout", func(c *kubeletapi.Config) { c.StreamCreationTimeout = -1 }, []string{"StreamCreationTimeout"}},
		{"negative cache TTL", func(c *kubeletapi.Config) { c.Auth.AuthenticationCacheTTL = -1 }, []string{"Auth.AuthenticationCacheTTL"}},
		{"negative allow TTL", func(c *kubeletapi.Config) { c.Auth.AuthorizationAllowTTL = -1 }, []string{"Auth.AuthorizationAllowTTL"}},
		{"negative deny TTL", func(c *kubeletapi.Config) { c.Auth.AuthorizationDenyTTL = -1 }, []string{"Auth.AuthorizationDenyTTL"}},
		{"negative webhook timeout", func(c *kubeletapi.Config) { c.Auth.WebhookTimeout = -1 }, []string{"Auth.WebhookTimeout"}},
		{"negative MaxRequestHeaderBytes", func(c *kubeletapi.Config) { c.MaxRequestHeaderBytes = -1 }, []string{"MaxRequestHeaderBytes -1 must not be negative"}},
		{"every error at once", func(c *kubeletapi.Config) {
			*c = kubeletapi.Config{}
		}, []string{"NodeName is required", "Pods is required", "no authentication method", "no authorization mode"}},
		{"missing cert file", func(c *kubeletapi.Config) { c.TLSCertFile = filepath.Join(dir, "nope.crt") }, []string{"serving certificate"}},
		{"bad cert file", func(c *kubeletapi.Config) { c.TLSCertFile = garbage }, []string{"serving certificate"}},
		{"missing client CA file", func(c *kubeletapi.Config) { c.Auth.ClientCAFile = filepath.Join(dir, "nope.crt") }, []string{"client CA file"}},
		{"bad client CA file", func(c *kubeletapi.Config) { c.Auth.ClientCAFile = garbage }, []string{"client CA file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := baseConfig()
			tt.mutate(&cfg)
			srv, err := kubeletapi.New(cfg)
			if tt.want == nil {
				require.NoError(t, err)
				require.NotNil(t, srv)
				return
			}
			require.Error(t, err)
			require.Nil(t, srv)
			require.True(t, errors.Is(err, kubeletapi.ErrInvalidConfig), "%v", err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

// TestNewRefusesOpenAPI: anonymous requests authorized by AlwaysAllow are
// refused on any address other hosts can reach, unless opted into.
func TestNewRefusesOpenAPI(t *testing.T) {
	defer goleak.VerifyNone(t)
	loopback, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer loopback.Close()
	wildcard, err := net.Listen("tcp", ":0")
	require.NoError(t, err)
	defer wildcard.Close()
	unix, err := net.Listen("unix", filepath.Join(t.TempDir(), "api.sock"))
	require.NoError(t, err)
	defer unix.Close()
	for _, tc := range []struct {
		name   string
		mutate func(*kubeletapi.Config)
		open   bool
	}{
		{"default address", func(c *kubeletapi.Config) { c.Addr = "" }, true},
		{"every interface", func(c *kubeletapi.Config) { c.Addr = "0.0.0.0:10250" }, true},
		{"IPv6 any", func(c *kubeletapi.Config) { c.Addr = "[::]:10250" }, true},
		{"node address", func(c *kubeletapi.Config) { c.Addr = "10.0.0.7:10250" }, true},
		{"host name", func(c *kubeletapi.Config) { c.Addr = "node-1:10250" }, true},
		{"listener on every interface", func(c *kubeletapi.Config) { c.Addr, c.Listener = "", wildcard }, true},
		{"listener, Addr disabled", func(c *kubeletapi.Config) { c.Addr, c.Listener = kubeletapi.Disabled, wildcard }, true},
		{"loopback", func(c *kubeletapi.Config) { c.Addr = "127.0.0.1:10250" }, false},
		{"IPv6 loopback", func(c *kubeletapi.Config) { c.Addr = "[::1]:10250" }, false},
		{"localhost", func(c *kubeletapi.Config) { c.Addr = "localhost:10250" }, false},
		{"loopback listener", func(c *kubeletapi.Config) { c.Addr, c.Listener = "", loopback }, false},
		{"unix socket listener", func(c *kubeletapi.Config) { c.Addr, c.Listener = "", unix }, false},
		{"listener bound later, Addr names it", func(c *kubeletapi.Config) { c.Addr, c.Listener = "127.0.0.1:10250", wildcard }, false},
		{"not served (Handler only)", func(c *kubeletapi.Config) { c.Addr = kubeletapi.Disabled }, false},
		{"opted into", func(c *kubeletapi.Config) { c.Addr, c.Auth.InsecureAnonymousOnNetwork = ":10250", true }, false},
		{"client certificates", func(c *kubeletapi.Config) {
			c.Addr, c.Auth.Anonymous, c.Auth.ClientCAFile = ":10250", false, servingCertFile
		}, false},
		{"anonymous, Webhook authorization", func(c *kubeletapi.Config) {
			c.Addr, c.Auth.AlwaysAllow, c.Auth.SubjectAccessReview = ":10250", false, clientset.Wrap(fake.NewClientset())
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := baseConfig()
			tc.mutate(&cfg)
			_, err := kubeletapi.New(cfg)
			if !tc.open {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, kubeletapi.ErrOpenAPI)
			require.ErrorIs(t, err, kubeletapi.ErrInvalidConfig)
		})
	}
}

func TestNewInlineStreamerValidation(t *testing.T) {
	_, err := kubeletapi.NewInlineStreamer(nil, 0, 0)
	require.Error(t, err)
}
