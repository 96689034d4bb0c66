package kubeletapi_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

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

func TestNewInlineStreamerValidation(t *testing.T) {
	_, err := kubeletapi.NewInlineStreamer(nil, 0, 0)
	require.Error(t, err)
}
