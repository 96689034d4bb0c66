package podnet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod() *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "u"}}
}

func TestHostnameAndDomain(t *testing.T) {
	c := Config{ClusterDomain: "cluster.local"}
	p := pod()
	h, d, err := c.HostnameAndDomain(p)
	require.NoError(t, err)
	assert.Equal(t, []string{"web-0", ""}, []string{h, d})

	p.Spec.Hostname, p.Spec.Subdomain = "db", "backend"
	h, d, err = c.HostnameAndDomain(p)
	require.NoError(t, err)
	assert.Equal(t, []string{"db", "backend.shop.svc.cluster.local"}, []string{h, d})
	yes := true
	p.Spec.SetHostnameAsFQDN = &yes
	fqdn, err := SandboxHostname(p, h, d)
	require.NoError(t, err)
	assert.Equal(t, "db.backend.shop.svc.cluster.local", fqdn)

	o := "custom.example"
	p.Spec.HostnameOverride = &o
	h, d, err = c.HostnameAndDomain(p)
	require.NoError(t, err)
	assert.Equal(t, []string{"custom.example", ""}, []string{h, d}, "the override wins and has no domain")

	p = pod()
	p.Name = strings.Repeat("a", 62) + "-b"
	h, _, err = c.HostnameAndDomain(p)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("a", 62), h, "truncated to 63 and trailing '-' trimmed")

	p.Spec.Hostname = "Bad_Label"
	_, _, err = c.HostnameAndDomain(p)
	assert.ErrorContains(t, err, `pod Hostname "Bad_Label" is not a valid DNS label`)
}

func TestDNS(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	require.NoError(t, os.WriteFile(resolv, []byte("# comment\nnameserver 192.0.2.53\nsearch corp.example. .\noptions timeout:2 ndots:1\n"), 0o644))
	c := Config{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ResolvConf: resolv}

	p := pod()
	p.Spec.DNSPolicy = v1.DNSClusterFirst
	cfg, warn, err := c.DNS(p)
	require.NoError(t, err)
	assert.Empty(t, warn)
	assert.Equal(t, []string{"10.96.0.10"}, cfg.Servers)
	assert.Equal(t, []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"}, cfg.Searches)
	assert.Equal(t, []string{"ndots:5"}, cfg.Options)

	p.Spec.HostNetwork = true
	cfg, _, err = c.DNS(p)
	require.NoError(t, err)
	assert.Equal(t, []string{"192.0.2.53"}, cfg.Servers, "ClusterFirst on the host network is Default")
	assert.ElementsMatch(t, []string{"timeout:2", "ndots:1"}, cfg.Options)

	p.Spec.DNSPolicy = v1.DNSClusterFirstWithHostNet
	cfg, _, err = c.DNS(p)
	require.NoError(t, err)
	assert.Equal(t, []string{"10.96.0.10"}, cfg.Servers)

	two := "2"
	p = pod()
	p.Spec.DNSPolicy = v1.DNSNone
	p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.example"},
		Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: &two}, {Name: "edns0"}}}
	cfg, _, err = c.DNS(p)
	require.NoError(t, err)
	assert.Equal(t, []string{"1.1.1.1"}, cfg.Servers)
	assert.Equal(t, []string{"a.example"}, cfg.Searches)
	assert.Equal(t, []string{"ndots:2", "edns0"}, cfg.Options)

	p.Spec.DNSConfig.Nameservers = []string{"1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"}
	cfg, warn, err = c.DNS(p)
	require.NoError(t, err)
	assert.Len(t, cfg.Servers, 3)
	require.Len(t, warn, 1)
	assert.Equal(t, "DNSConfigForming", warn[0].Reason)
	assert.Contains(t, warn[0].Message, "Nameserver limits were exceeded")

	noDNS := Config{ResolvConf: resolv}
	p = pod()
	p.Spec.DNSPolicy = v1.DNSClusterFirst
	cfg, warn, err = noDNS.DNS(p)
	require.NoError(t, err)
	assert.Equal(t, []string{"192.0.2.53"}, cfg.Servers)
	require.Len(t, warn, 1)
	assert.Equal(t, "MissingClusterDNS", warn[0].Reason)
	assert.Contains(t, warn[0].Message, "kubelet does not have ClusterDNS IP configured")
}

func TestHostsFile(t *testing.T) {
	p := pod()
	p.Spec.HostAliases = []v1.HostAlias{{IP: "192.0.2.9", Hostnames: []string{"foo.local", "bar.local"}}}
	got := string(HostsFile(p, []string{"10.1.0.5"}, "web-0", "backend.shop.svc.cluster.local", nil))
	assert.Equal(t, "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"+
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"+
		"10.1.0.5\tweb-0.backend.shop.svc.cluster.local\tweb-0\n\n# Entries added by HostAliases.\n192.0.2.9\tfoo.local\tbar.local\n", got)

	p.Spec.HostNetwork = true
	got = string(HostsFile(p, nil, "web-0", "", []byte("127.0.0.1 localhost\n")))
	assert.Equal(t, "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n\n# Entries added by HostAliases.\n192.0.2.9\tfoo.local\tbar.local\n", got)
}
