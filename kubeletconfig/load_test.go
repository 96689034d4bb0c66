package kubeletconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

const header = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

func TestLoadAppliesUpstreamDefaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(header+"maxPods: 50\nclusterDNS: [10.96.0.10]\nauthentication:\n  x509:\n    clientCAFile: /etc/ca.crt\n"), 0o600))
	c, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, path, c.Path)
	assert.Equal(t, int32(50), c.MaxPods)
	assert.Equal(t, []string{"10.96.0.10"}, c.ClusterDNS)
	assert.Equal(t, "/etc/ca.crt", c.Authentication.X509.ClientCAFile)
	// Defaults, as the v1.36 kubelet's.
	assert.Equal(t, int32(10250), c.Port)
	assert.Equal(t, "127.0.0.1", c.HealthzBindAddress)
	assert.Equal(t, int32(10248), *c.HealthzPort)
	assert.Equal(t, kubeletv1beta1.KubeletAuthorizationModeWebhook, c.Authorization.Mode)
	assert.True(t, *c.Authentication.Webhook.Enabled)
	assert.False(t, *c.Authentication.Anonymous.Enabled)
	assert.Equal(t, 10*time.Second, c.NodeStatusUpdateFrequency.Duration)
	assert.Equal(t, 5*time.Minute, c.NodeStatusReportFrequency.Duration)
	assert.True(t, *c.SerializeImagePulls)
	assert.Equal(t, "cgroupfs", c.CgroupDriver)
	assert.Equal(t, []string{"pods"}, c.EnforceNodeAllocatable)
	assert.Equal(t, int64(-1), *c.PodPidsLimit)
	assert.Equal(t, "/var/log/pods", c.PodLogsDir)
	assert.Equal(t, 300*time.Second, c.CrashLoopBackOff.MaxContainerRestartPeriod.Duration)
}

func TestDefaultsFollowRelatedFields(t *testing.T) {
	c, err := Parse("c", []byte(header+"nodeStatusUpdateFrequency: 20s\nmaxParallelImagePulls: 3\nfeatureGates:\n  KubeletCrashLoopBackOffMax: false\n"))
	require.NoError(t, err)
	assert.Equal(t, 20*time.Second, c.NodeStatusReportFrequency.Duration, "the report frequency follows the update frequency when set")
	assert.False(t, *c.SerializeImagePulls, "parallel pulls asked for")
	assert.Nil(t, c.CrashLoopBackOff.MaxContainerRestartPeriod, "its gate is off")
}

func TestStrictErrorsNameFileLineAndField(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"unknown top-level field", header + "maxPods: 10\nmaxPodz: 20\n", `c.yaml:4: unknown field "maxPodz"`},
		{"unknown nested field", header + "authentication:\n  x509:\n    clientCaFile: /x\n", `c.yaml:5: unknown field "authentication.x509.clientCaFile"`},
		{"wrong shape", header + "clusterDNS: 10.96.0.10\n", `c.yaml:3: clusterDNS: want a list`},
		{"duplicate field", header + "maxPods: 10\nmaxPods: 20\n", `c.yaml`},
		{"wrong type", header + "maxPods: many\n", `maxPods`},
		{"wrong kind", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeProxyConfiguration\n", `want apiVersion kubelet.config.k8s.io/v1beta1 kind KubeletConfiguration`},
		{"no apiVersion", "kind: KubeletConfiguration\n", `want apiVersion`},
		{"not a mapping", "- a\n- b\n", "not a mapping"},
		{"two documents", header + "---\n" + header, "more than one document"},
		{"in a list of objects", header + "registerWithTaints:\n- key: a\n  effect: NoSchedule\n  valeu: x\n", `c.yaml:6: unknown field "registerWithTaints[0].valeu"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.body))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	require.ErrorContains(t, err, "missing.yaml")
}

func TestUnsupportedListsNonDefaultFieldsOnly(t *testing.T) {
	c, err := Parse("c", []byte(header+`
maxPods: 110            # the default: fine
port: 10250             # the default: fine
cpuManagerPolicy: static
clusterDomain: cluster.local
authentication:
  webhook:
    cacheTTL: 1m
  x509:
    clientCAFile: /etc/ca.crt
systemReserved:
  cpu: 100m
`))
	require.NoError(t, err)
	assert.Equal(t, []string{"authentication.webhook.cacheTTL", "clusterDomain", "cpuManagerPolicy", "systemReserved"}, c.Unsupported("authentication.x509"))
	assert.Equal(t, []string{"authentication.webhook.cacheTTL", "cpuManagerPolicy"}, c.Unsupported("authentication.x509", "clusterDomain", "systemReserved"))
	err = c.CheckSupported("authentication", "clusterDomain", "systemReserved")
	require.ErrorIs(t, err, ErrUnsupported)
	assert.Contains(t, err.Error(), "cpuManagerPolicy")
	assert.NoError(t, c.CheckSupported("authentication", "clusterDomain", "systemReserved", "cpuManagerPolicy"))

	empty, err := Parse("c", []byte(header))
	require.NoError(t, err)
	assert.Empty(t, empty.Unsupported(), "an empty file sets nothing")
}

func TestUnsupportedIgnoresDefaultsThatFollowAnotherField(t *testing.T) {
	c, err := Parse("c", []byte(header+"nodeStatusUpdateFrequency: 20s\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"nodeStatusUpdateFrequency"}, c.Unsupported(), "the report frequency follows it; the file does not set it")
	assert.True(t, c.Sets("nodeStatusUpdateFrequency"))
	assert.False(t, c.Sets("nodeStatusReportFrequency"))
	assert.False(t, c.Sets("authentication.x509.clientCAFile"))
}

// TestLoadRefusesLargeFiles: a file over MaxFileSize is refused before it
// is parsed (a 15 MB one took 7.6 s to parse); one at the limit is parsed.
func TestLoadRefusesLargeFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, size int) string {
		path := filepath.Join(dir, name)
		body := header + "# "
		pad := size - len(body) - 1
		require.NoError(t, os.WriteFile(path, []byte(body+strings.Repeat("x", pad)+"\n"), 0o600))
		return path
	}
	_, err := Load(write("big.yaml", MaxFileSize+1))
	require.ErrorIs(t, err, ErrTooLarge)
	require.ErrorContains(t, err, "big.yaml")
	_, err = Parse("inline", make([]byte, MaxFileSize+1))
	require.ErrorIs(t, err, ErrTooLarge)
	c, err := Load(write("limit.yaml", MaxFileSize))
	require.NoError(t, err)
	require.Equal(t, int32(10250), c.Port)
}
