package podnet

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The resolver's limits the kubelet applies (glibc reads no more).
const (
	maxNameservers  = 3
	maxSearchPaths  = 32
	maxSearchChars  = 2048
	maxHostnameLen  = 63
	maxResolvConf   = 10 << 20
	defaultNdotsOpt = "ndots:5"
)

// Config is the node's DNS setup: the kubelet's --cluster-dns,
// --cluster-domain and --resolv-conf.
type Config struct {
	// ClusterDNS are the cluster DNS servers. Empty: pods asking for
	// cluster DNS fall back to the node's, with a MissingClusterDNS
	// warning.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain ("cluster.local").
	ClusterDomain string
	// ResolvConf is the node's resolver file whose servers, searches and
	// options pods with dnsPolicy Default get (and whose searches cluster
	// pods add). Empty: none.
	ResolvConf string
}

// HostnameAndDomain returns the pod's hostname and its domain
// (<subdomain>.<namespace>.svc.<cluster domain>, empty without a
// subdomain), with the kubelet's validation and truncation.
func (c Config) HostnameAndDomain(pod *v1.Pod) (string, string, error) {
	if o := pod.Spec.HostnameOverride; o != nil {
		if msgs := validation.IsDNS1123Subdomain(*o); len(msgs) > 0 {
			return "", "", fmt.Errorf("pod HostnameOverride %q is not a valid DNS subdomain: %s", *o, strings.Join(msgs, ";"))
		}
		h, err := truncate(pod.Name, *o)
		return h, "", err
	}
	host := pod.Name
	if pod.Spec.Hostname != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Hostname); len(msgs) > 0 {
			return "", "", fmt.Errorf("pod Hostname %q is not a valid DNS label: %s", pod.Spec.Hostname, strings.Join(msgs, ";"))
		}
		host = pod.Spec.Hostname
	}
	host, err := truncate(pod.Name, host)
	if err != nil {
		return "", "", err
	}
	domain := ""
	if pod.Spec.Subdomain != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Subdomain); len(msgs) > 0 {
			return "", "", fmt.Errorf("pod Subdomain %q is not a valid DNS label: %s", pod.Spec.Subdomain, strings.Join(msgs, ";"))
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, c.ClusterDomain)
	}
	return host, domain, nil
}

// SandboxHostname is the hostname the sandbox gets: the FQDN with
// setHostnameAsFQDN (at most 64 characters), else the hostname.
func SandboxHostname(pod *v1.Pod, host, domain string) (string, error) {
	if pod.Spec.SetHostnameAsFQDN != nil && *pod.Spec.SetHostnameAsFQDN && domain != "" {
		fqdn := host + "." + domain
		if len(fqdn) > 64 {
			return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (64 characters is the max, %d characters requested)", fqdn, len(fqdn))
		}
		return fqdn, nil
	}
	return host, nil
}

func truncate(podName, host string) (string, error) {
	if len(host) <= maxHostnameLen {
		return host, nil
	}
	t := strings.TrimRight(host[:maxHostnameLen], "-.")
	if t == "" {
		return "", fmt.Errorf("hostname for pod %q was invalid: %q", podName, host)
	}
	return t, nil
}

// Warning is a problem worth a Warning event on the pod.
type Warning struct {
	Reason, Message string
}

// DNS returns the pod's resolver configuration, and warnings for events
// (MissingClusterDNS, DNSConfigForming).
func (c Config) DNS(pod *v1.Pod) (*runtimeapi.DNSConfig, []Warning, error) {
	var warn []Warning
	host, err := c.hostDNS()
	if err != nil {
		return nil, nil, err
	}
	cfg := host
	policy := pod.Spec.DNSPolicy
	cluster := policy == v1.DNSClusterFirstWithHostNet || policy == "" ||
		(policy == v1.DNSClusterFirst && !pod.Spec.HostNetwork)
	switch {
	case policy == v1.DNSNone:
		cfg = &runtimeapi.DNSConfig{}
	case cluster && len(c.ClusterDNS) > 0:
		cfg.Servers = slices.Clone(c.ClusterDNS)
		if c.ClusterDomain != "" {
			ns := pod.Namespace + ".svc." + c.ClusterDomain
			cfg.Searches = dedupe(append([]string{ns, "svc." + c.ClusterDomain, c.ClusterDomain}, cfg.Searches...))
		}
		cfg.Options = []string{defaultNdotsOpt}
	default:
		if cluster {
			warn = append(warn, Warning{"MissingClusterDNS", fmt.Sprintf("pod: %q. kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.",
				pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")", v1.DNSClusterFirst, v1.DNSDefault)})
		}
		if c.ResolvConf == "" {
			cfg.Servers, cfg.Searches = []string{"127.0.0.1"}, []string{"."}
		}
	}
	if d := pod.Spec.DNSConfig; d != nil {
		cfg.Servers = dedupe(append(cfg.Servers, d.Nameservers...))
		cfg.Searches = dedupe(append(cfg.Searches, d.Searches...))
		cfg.Options = mergeOptions(cfg.Options, d.Options)
	}
	if len(cfg.Servers) > maxNameservers {
		cfg.Servers = cfg.Servers[:maxNameservers]
		warn = append(warn, Warning{"DNSConfigForming",
			"Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: " + strings.Join(cfg.Servers, " ")})
	}
	// Paths longer than a DNS name are dropped, then the list is cut to
	// what the resolver reads.
	long := slices.ContainsFunc(cfg.Searches, func(p string) bool { return len(p) > validation.DNS1123SubdomainMaxLength })
	cfg.Searches = slices.DeleteFunc(cfg.Searches, func(p string) bool { return len(p) > validation.DNS1123SubdomainMaxLength })
	if n := fitSearches(cfg.Searches); n < len(cfg.Searches) || long {
		cfg.Searches = cfg.Searches[:n]
		warn = append(warn, Warning{"DNSConfigForming",
			"Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(cfg.Searches, " ")})
	}
	return cfg, warn, nil
}

// fitSearches returns how many search paths fit the resolver's limits.
func fitSearches(s []string) int {
	n, chars := 0, 0
	for _, p := range s {
		add := len(p)
		if n > 0 {
			add++
		}
		if n == maxSearchPaths || chars+add > maxSearchChars {
			break
		}
		n, chars = n+1, chars+add
	}
	return n
}

func (c Config) hostDNS() (*runtimeapi.DNSConfig, error) {
	if c.ResolvConf == "" {
		return &runtimeapi.DNSConfig{}, nil
	}
	f, err := os.Open(c.ResolvConf)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseResolvConf(f)
}

// ParseResolvConf reads nameserver, search (the last line wins) and
// options lines of a resolv.conf.
func ParseResolvConf(r io.Reader) (*runtimeapi.DNSConfig, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxResolvConf+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxResolvConf {
		return nil, fmt.Errorf("resolv.conf is longer than %d bytes", maxResolvConf)
	}
	cfg := &runtimeapi.DNSConfig{Servers: []string{}, Searches: []string{}, Options: []string{}}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(strings.TrimSpace(line))
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) < 2 {
				return nil, fmt.Errorf("nameserver list is empty ")
			}
			cfg.Servers = append(cfg.Servers, f[1])
		case "search":
			cfg.Searches = []string{}
			for _, s := range f[1:] {
				if s != "." {
					cfg.Searches = append(cfg.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			cfg.Options = mergeOptionStrings(cfg.Options, f[1:])
		}
	}
	return cfg, nil
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	out := s[:0:0]
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

func optName(o string) string { n, _, _ := strings.Cut(o, ":"); return n }

// mergeOptionStrings adds options, a later one replacing an earlier one of
// the same name.
func mergeOptionStrings(have, add []string) []string {
	out := slices.Clone(have)
	for _, o := range add {
		if i := slices.IndexFunc(out, func(x string) bool { return optName(x) == optName(o) }); i >= 0 {
			out[i] = o
		} else {
			out = append(out, o)
		}
	}
	return out
}

func mergeOptions(have []string, add []v1.PodDNSConfigOption) []string {
	strs := make([]string, 0, len(add))
	for _, o := range add {
		s := o.Name
		if o.Value != nil && *o.Value != "" {
			s += ":" + *o.Value
		}
		strs = append(strs, s)
	}
	return mergeOptionStrings(have, strs)
}

// HostsFile is the content of the kubelet-managed /etc/hosts: localhost
// entries, the pod's addresses with its hostname (and FQDN), and
// hostAliases. A host-network pod gets the node's file (nodeHosts) with
// its aliases appended.
func HostsFile(pod *v1.Pod, podIPs []string, host, domain string, nodeHosts []byte) []byte {
	var b bytes.Buffer
	if pod.Spec.HostNetwork {
		b.WriteString("# Kubernetes-managed hosts file (host network).\n")
		b.Write(nodeHosts)
	} else {
		b.WriteString("# Kubernetes-managed hosts file.\n")
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\n")
		b.WriteString("fe00::0\tip6-mcastprefix\n")
		b.WriteString("fe00::1\tip6-allnodes\n")
		b.WriteString("fe00::2\tip6-allrouters\n")
		for _, ip := range podIPs {
			if domain != "" {
				fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, host, domain, host)
			} else {
				fmt.Fprintf(&b, "%s\t%s\n", ip, host)
			}
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.Bytes()
}
