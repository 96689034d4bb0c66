package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodekit/nodekit/kubeletconfig"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubelet.yaml")
	require.NoError(t, os.WriteFile(path, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"+body), 0o600))
	return path
}

func TestConfigFileAndFlagsOverridingIt(t *testing.T) {
	cfg := writeConfig(t, `
staticPodPath: /etc/kubernetes/manifests
clusterDNS: [10.96.0.10]
clusterDomain: cluster.local
maxPods: 50
port: 10260
healthzPort: 0
systemReserved: {cpu: 100m, memory: 256Mi}
kubeReserved: {memory: 128Mi}
evictionHard: {memory.available: 200Mi, nodefs.available: 5%}
imageGCHighThresholdPercent: 90
imageGCLowThresholdPercent: 70
imageMinimumGCAge: 5m
imageMaximumGCAge: 168h
registerWithTaints:
- {key: edge, value: "true", effect: NoSchedule}
providerID: edge://n1
authentication:
  x509: {clientCAFile: /etc/ca.crt}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
`)
	opts, err := parseFlags([]string{"--config", cfg, "--node-name", "n1", "--max-pods", "60", "--cluster-domain", "corp.local", "--image-gc-low-threshold", "75",
		"--node-labels", "node.kubernetes.io/role=edge,example.com/site=berlin", "--hostname-override", "Edge-1"})
	require.NoError(t, err)
	assert.Equal(t, "/etc/kubernetes/manifests", opts.PodManifestPath)
	assert.Equal(t, []string{"10.96.0.10"}, opts.ClusterDNS)
	assert.Equal(t, "corp.local", opts.ClusterDomain, "a flag given overrides the file")
	assert.Equal(t, 60, opts.MaxPods, "a flag given overrides the file")
	assert.Equal(t, "0.0.0.0:10260", opts.APIAddr)
	assert.Equal(t, "-", opts.HealthzAddr, "healthzPort 0 turns it off")
	assert.Equal(t, v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("256Mi")}, opts.SystemReserved)
	assert.Equal(t, "memory.available<200Mi,nodefs.available<5%", opts.EvictionHard)
	assert.Equal(t, 90, opts.ImageGCHighThresholdPercent)
	assert.Equal(t, 75, opts.ImageGCLowThresholdPercent, "a flag given overrides the file")
	assert.Equal(t, 5*time.Minute, opts.ImageMinimumGCAge)
	assert.Equal(t, 168*time.Hour, opts.ImageMaximumGCAge)
	assert.Equal(t, []v1.Taint{{Key: "edge", Value: "true", Effect: v1.TaintEffectNoSchedule}}, opts.RegisterWithTaints)
	assert.Equal(t, "edge://n1", opts.ProviderID)
	assert.Equal(t, "/etc/ca.crt", opts.ClientCAFile)
	assert.Equal(t, "AlwaysAllow", opts.AuthorizationMode)
	assert.Equal(t, "unix:///run/containerd/containerd.sock", opts.RuntimeEndpoint)
	assert.Equal(t, map[string]string{"node.kubernetes.io/role": "edge", "example.com/site": "berlin"}, opts.NodeLabels)
	assert.Equal(t, "edge-1", opts.Hostname)
	require.NoError(t, opts.Validate())
}

func TestConfigFileUnsupportedFieldsAreRefused(t *testing.T) {
	cfg := writeConfig(t, "cpuManagerPolicy: static\nsyncFrequency: 30s\nsyncFrequency2: 1s\n")
	_, err := parseFlags([]string{"--config", cfg})
	require.ErrorContains(t, err, `kubelet.yaml:5: unknown field "syncFrequency2"`)

	cfg = writeConfig(t, "cpuManagerPolicy: static\nsyncFrequency: 1m\nnodeStatusUpdateFrequency: 20s\n")
	_, err = parseFlags([]string{"--config", cfg})
	require.ErrorIs(t, err, kubeletconfig.ErrUnsupported)
	assert.Contains(t, err.Error(), "cpuManagerPolicy, nodeStatusUpdateFrequency", "each named; syncFrequency is the default")
}

func TestNodeLabelsAndTaintsAreChecked(t *testing.T) {
	opts, err := parseFlags([]string{"--kubeconfig", "", "--node-labels", "node-role.kubernetes.io/master=", "--pod-manifest-path", "/x"})
	require.NoError(t, err)
	require.ErrorContains(t, opts.Validate(), "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [node-role.kubernetes.io/master]")
	_, err = parseFlags([]string{"--register-with-taints", "dedicated=gpu:NoPlace"})
	require.ErrorContains(t, err, `effect "NoPlace"`)
	_, err = parseFlags([]string{"--system-reserved", "gpu=1"})
	require.ErrorContains(t, err, `resource "gpu"`)
}

// A node joining with a bootstrap token: the node's kubeconfig is written
// to point at the certificate store, the agent's client config presents
// the store's certificate, and the serving certificate is requested.
func TestBootstrapFlagsAndConfig(t *testing.T) {
	dir := t.TempDir()
	boot := filepath.Join(dir, "bootstrap.conf")
	require.NoError(t, os.WriteFile(boot, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://192.0.2.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abcdef.0123456789abcdef}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))
	cfg := writeConfig(t, "rotateCertificates: true\nserverTLSBootstrap: true\nfailSwapOn: false\nfailCgroupV1: true\n")
	kubeconfig := filepath.Join(dir, "kubelet.conf")
	opts, err := parseFlags([]string{"--config", cfg, "--node-name", "n1", "--bootstrap-kubeconfig", boot,
		"--kubeconfig", kubeconfig, "--root-dir", filepath.Join(dir, "root")})
	require.NoError(t, err)
	require.NotNil(t, opts.Credentials)
	assert.True(t, opts.ServerTLSBootstrap)
	assert.False(t, opts.FailSwapOn)
	assert.True(t, opts.FailCgroupV1)
	assert.Equal(t, filepath.Join(dir, "root", "pki"), opts.CertDir, "--cert-dir defaults under --root-dir")
	assert.NotNil(t, opts.Kube.Transport, "the client presents the store's certificate")
	assert.Equal(t, float32(50), opts.Kube.QPS)
	_, err = os.Stat(kubeconfig)
	require.NoError(t, err, "the node's kubeconfig is written")
	require.NoError(t, opts.Validate())

	_, err = parseFlags([]string{"--bootstrap-kubeconfig", boot})
	require.ErrorContains(t, err, "--bootstrap-kubeconfig needs --kubeconfig")
}

// TestNodeLogConfig: enableSystemLogHandler and enableSystemLogQuery map
// onto the node log options as the kubelet reads them: the handler is on
// by default (/var/log with a real runtime), the query off, and the query
// needs the handler.
func TestNodeLogConfig(t *testing.T) {
	rt := []string{"--container-runtime-endpoint", "unix:///nonexistent.sock", "--pod-manifest-path", t.TempDir()}
	opts, err := parseFlags(append([]string{"--config", writeConfig(t, "enableSystemLogQuery: true\n")}, rt...))
	require.NoError(t, err)
	require.NoError(t, opts.Validate())
	assert.True(t, opts.NodeLogQuery)
	assert.Empty(t, opts.NodeLogDir, "the handler's default: /var/log once a real runtime is known")

	opts, err = parseFlags(append([]string{"--config", writeConfig(t, "enableSystemLogHandler: false\n")}, rt...))
	require.NoError(t, err)
	assert.Equal(t, "-", opts.NodeLogDir, "the handler off serves nothing")
	assert.False(t, opts.NodeLogQuery)

	opts, err = parseFlags(append([]string{"--config",
		writeConfig(t, "enableSystemLogHandler: false\nenableSystemLogQuery: true\n")}, rt...))
	require.NoError(t, err)
	assert.ErrorContains(t, opts.Validate(), "the node log query needs the node log directory")
}
