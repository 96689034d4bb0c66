package nodestatus

import (
	"net"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// View is the node as the other parts of an agent see it: the Node a
// Controller last read or wrote (Config.View), else a fallback, the node as
// the agent would register it (static pods start before the Node exists,
// and a standalone agent never registers one). Build it before the parts
// that read the node (pod syncer, volumes, admission, the serving
// certificate); the Controller, built after them from their setters,
// keeps it current. Safe for concurrent use.
type View struct {
	fallback func() (*v1.Node, error)

	mu     sync.Mutex
	node   *v1.Node // last reported; nil before
	backup *v1.Node // the fallback once built
}

// NewView returns a View that answers with fallback's node (built on first
// use and kept; an error is retried on the next use) until a Controller
// reports one. A nil fallback is a node without status.
func NewView(fallback func() (*v1.Node, error)) *View {
	if fallback == nil {
		fallback = func() (*v1.Node, error) { return &v1.Node{}, nil }
	}
	return &View{fallback: fallback}
}

// set records the Controller's last-known Node (a copy the View owns).
func (v *View) set(n *v1.Node) {
	v.mu.Lock()
	v.node = n
	v.mu.Unlock()
}

// Node returns the last reported Node, else the fallback. The Node is
// shared: callers must not modify it.
func (v *View) Node() (*v1.Node, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.node != nil {
		return v.node, nil
	}
	if v.backup == nil {
		n, err := v.fallback()
		if err != nil {
			return nil, err
		}
		v.backup = n
	}
	return v.backup, nil
}

// Reported tells whether a Controller reported a Node yet.
func (v *View) Reported() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.node != nil
}

// Addresses are the node's addresses (nil when the fallback fails).
func (v *View) Addresses() []v1.NodeAddress {
	n, err := v.Node()
	if err != nil {
		return nil
	}
	return n.Status.Addresses
}

// HostIPs are the node's IPs as the kubelet gives pods (status.hostIPs):
// one per family, the first InternalIP, else the first ExternalIP.
func (v *View) HostIPs() []string {
	var v4, v6 string
	addrs := v.Addresses()
	for _, t := range []v1.NodeAddressType{v1.NodeInternalIP, v1.NodeExternalIP} {
		for _, addr := range addrs {
			ip := net.ParseIP(addr.Address)
			if addr.Type != t || ip == nil {
				continue
			}
			if ip.To4() != nil && v4 == "" {
				v4 = addr.Address
			} else if ip.To4() == nil && v6 == "" {
				v6 = addr.Address
			}
		}
	}
	var ips []string
	for _, ip := range []string{v4, v6} {
		if ip != "" {
			ips = append(ips, ip)
		}
	}
	return ips
}

// Allocatable is the node's allocatable resources (nil when the fallback
// fails).
func (v *View) Allocatable() v1.ResourceList {
	n, err := v.Node()
	if err != nil {
		return nil
	}
	return n.Status.Allocatable
}

// MemoryCapacity is the node's memory capacity in bytes (0 unknown).
func (v *View) MemoryCapacity() int64 {
	n, err := v.Node()
	if err != nil {
		return 0
	}
	return n.Status.Capacity.Memory().Value()
}

// SubtractResources is capacity less reserved, resource by resource, never
// below zero: node allocatable from capacity and reservations.
func SubtractResources(capacity, reserved v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for name, q := range capacity {
		q = q.DeepCopy()
		if r, ok := reserved[name]; ok {
			q.Sub(r)
		}
		if q.Sign() < 0 {
			q.Set(0)
		}
		out[name] = q
	}
	return out
}
