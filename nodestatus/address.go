package nodestatus

import (
	"context"
	"fmt"
	"net"
	"time"

	v1 "k8s.io/api/core/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/klog/v2"
)

// AnnotationProvidedIPAddr is set on the node with the configured node IPs
// when an external cloud provider owns the addresses, as the kubelet does.
const AnnotationProvidedIPAddr = "alpha.kubernetes.io/provided-node-ip"

// AddressConfig configures NodeAddress.
type AddressConfig struct {
	// NodeIPs are the node's IPs: none (discover), one, or two of different
	// families (dual-stack). An unspecified address (0.0.0.0 or ::) means
	// "discover, preferring this family".
	NodeIPs []net.IP
	// Hostname is reported as the Hostname address. Required.
	Hostname string
	// ExternalCloudProvider: addresses set by a cloud controller take
	// precedence; the node IPs are announced in AnnotationProvidedIPAddr.
	ExternalCloudProvider bool
	// ValidateIP checks an IP before it is reported. Default
	// ValidateHostIP: a usable unicast address of one of this host's
	// interfaces.
	ValidateIP func(net.IP) error
	// LookupIP resolves the node name. Default net.LookupIP.
	LookupIP func(host string) ([]net.IP, error)
	// ResolveAddress finds the address of the default-route interface when
	// nothing else worked. Default utilnet.ResolveBindAddress.
	ResolveAddress func(net.IP) (net.IP, error)
}

// NodeAddress returns the setter of status.addresses with the kubelet's
// rules: the configured node IP(s), else the hostname if it is an IP, else a
// DNS lookup of the node name (preferring the configured family), else the
// default-route interface; then the Hostname address. Addresses are
// replaced, not merged.
func NodeAddress(cfg AddressConfig) (Setter, error) {
	if cfg.Hostname == "" {
		return nil, invalid("NodeAddress: Hostname is required")
	}
	if err := checkNodeIPs(cfg.NodeIPs); err != nil {
		return nil, err
	}
	if cfg.ValidateIP == nil {
		cfg.ValidateIP = ValidateHostIP
	}
	if cfg.LookupIP == nil {
		cfg.LookupIP = net.LookupIP
	}
	if cfg.ResolveAddress == nil {
		cfg.ResolveAddress = utilnet.ResolveBindAddress
	}
	var primary, secondary net.IP
	if len(cfg.NodeIPs) > 0 {
		primary = cfg.NodeIPs[0]
	}
	if len(cfg.NodeIPs) > 1 {
		secondary = cfg.NodeIPs[1]
	}
	a := addressSetter{cfg: cfg, primary: primary, secondary: secondary,
		primarySet:   primary != nil && !primary.IsUnspecified(),
		secondarySet: secondary != nil && !secondary.IsUnspecified(),
		preferIPv4:   primary == nil || primary.To4() != nil,
	}
	return a.set, nil
}

func checkNodeIPs(ips []net.IP) error {
	if len(ips) > 2 {
		return invalid("NodeAddress: at most two node IPs (one per family), got %d", len(ips))
	}
	for i, ip := range ips {
		if ip == nil || (ip.To4() == nil && ip.To16() == nil) {
			return invalid("NodeAddress: node IP %d is not a valid IP address", i)
		}
		if ip.IsUnspecified() {
			if i > 0 {
				return invalid("NodeAddress: the secondary node IP cannot be unspecified (%s)", ip)
			}
			continue
		}
		if err := staticIPCheck(ip); err != nil {
			return invalid("NodeAddress: node IP %s: %v", ip, err)
		}
	}
	if len(ips) == 2 && (ips[0].To4() != nil) == (ips[1].To4() != nil) {
		return invalid("NodeAddress: dual-stack node IPs must be of different families: %s, %s", ips[0], ips[1])
	}
	return nil
}

func staticIPCheck(ip net.IP) error {
	switch {
	case ip.IsLoopback():
		return fmt.Errorf("nodeIP can't be loopback address")
	case ip.IsMulticast():
		return fmt.Errorf("nodeIP can't be a multicast address")
	case ip.IsLinkLocalUnicast():
		return fmt.Errorf("nodeIP can't be a link-local unicast address")
	case ip.IsUnspecified():
		return fmt.Errorf("nodeIP can't be an all zeros address")
	}
	return nil
}

// ValidateHostIP accepts an IP that is a valid unicast address, not loopback
// or link-local, and assigned to one of this host's interfaces (the
// kubelet's rule for --node-ip).
func ValidateHostIP(ip net.IP) error {
	if ip.To4() == nil && ip.To16() == nil {
		return fmt.Errorf("nodeIP must be a valid IP address")
	}
	if err := staticIPCheck(ip); err != nil {
		return err
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return err
	}
	for _, addr := range addrs {
		if n, ok := addr.(*net.IPNet); ok && n.IP.Equal(ip) {
			return nil
		}
	}
	return fmt.Errorf("node IP: %q not found in the host's network interfaces", ip.String())
}

type addressSetter struct {
	cfg                      AddressConfig
	primary, secondary       net.IP
	primarySet, secondarySet bool
	preferIPv4               bool
}

func (a *addressSetter) set(ctx context.Context, _ time.Time, node *v1.Node) error {
	if a.primarySet {
		if err := a.cfg.ValidateIP(a.primary); err != nil {
			return fmt.Errorf("failed to validate nodeIP: %w", err)
		}
	}
	if a.secondarySet {
		if err := a.cfg.ValidateIP(a.secondary); err != nil {
			return fmt.Errorf("failed to validate secondaryNodeIP: %w", err)
		}
	}
	a.annotate(node)
	if a.cfg.ExternalCloudProvider {
		if len(node.Status.Addresses) > 0 {
			return nil // the cloud provider's addresses win
		}
		if a.primary == nil {
			node.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeHostName, Address: a.cfg.Hostname}}
			return nil
		}
	}
	if a.primarySet && a.secondarySet {
		node.Status.Addresses = []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: a.primary.String()},
			{Type: v1.NodeInternalIP, Address: a.secondary.String()},
			{Type: v1.NodeHostName, Address: a.cfg.Hostname},
		}
		return nil
	}
	ip, err := a.discover(node.Name)
	if ip == nil {
		return fmt.Errorf("can't get ip address of node %s. error: %v", node.Name, err)
	}
	klog.FromContext(ctx).V(4).Info("Using node IP", "IP", ip.String())
	node.Status.Addresses = []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: ip.String()},
		{Type: v1.NodeHostName, Address: a.cfg.Hostname},
	}
	return nil
}

func (a *addressSetter) annotate(node *v1.Node) {
	if a.cfg.ExternalCloudProvider && a.primarySet {
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		v := a.primary.String()
		if a.secondarySet {
			v += "," + a.secondary.String()
		}
		node.Annotations[AnnotationProvidedIPAddr] = v
		return
	}
	delete(node.Annotations, AnnotationProvidedIPAddr)
}

// discover picks the node IP: the configured one, the hostname if it is an
// IP, a valid DNS answer for the node name (preferred family first), or
// the default-route interface.
func (a *addressSetter) discover(nodeName string) (net.IP, error) {
	if a.primarySet {
		return a.primary, nil
	}
	if ip := net.ParseIP(a.cfg.Hostname); ip != nil {
		return ip, nil
	}
	var pick net.IP
	var err error
	addrs, _ := a.cfg.LookupIP(nodeName)
	for _, addr := range addrs {
		if err = a.cfg.ValidateIP(addr); err != nil {
			continue
		}
		if (addr.To4() != nil) == a.preferIPv4 {
			return addr, nil
		}
		if pick == nil {
			pick = addr
		}
	}
	if pick != nil {
		return pick, nil
	}
	return a.cfg.ResolveAddress(a.primary)
}
