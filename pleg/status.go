package pleg

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PodStatus is the runtime state of one pod as the generator last fetched
// it: the CRI statuses of its sandboxes and containers. It plays the role of
// upstream's kubecontainer.PodStatus, in CRI terms. Values in the cache are
// shared: callers must not modify them.
type PodStatus struct {
	// ID is the pod UID.
	ID types.UID
	// Name and Namespace come from the newest sandbox's metadata.
	Name, Namespace string
	// IPs are the pod IPs of the newest sandbox if it is ready (primary
	// first). When no sandbox is ready any more, the last known IPs are kept,
	// like upstream, so a completed pod still reports its IP.
	IPs []string
	// SandboxStatuses are the pod's sandboxes, newest first.
	SandboxStatuses []*runtimeapi.PodSandboxStatus
	// ContainerStatuses are the pod's containers, newest first.
	ContainerStatuses []*runtimeapi.ContainerStatus
	// Timestamp is when the listing this status is based on started.
	Timestamp time.Time
}

// SandboxIPs returns the IPs of a sandbox status, primary first (none
// without a network status or a primary IP).
func SandboxIPs(s *runtimeapi.PodSandboxStatus) []string {
	n := s.GetNetwork()
	if n == nil || n.Ip == "" {
		return nil
	}
	ips := []string{n.Ip}
	for _, ip := range n.AdditionalIps {
		if ip.GetIp() != "" {
			ips = append(ips, ip.Ip)
		}
	}
	return ips
}

// finishStatus sorts st's statuses newest first and fills Name, Namespace
// and IPs. prevIPs are the IPs of the previously cached status, kept when no
// sandbox is ready any more (policy shared with upstream's getPodIPs).
func finishStatus(st *PodStatus, prevIPs []string) {
	slices.SortStableFunc(st.SandboxStatuses, func(a, b *runtimeapi.PodSandboxStatus) int {
		return cmpNewest(a.CreatedAt, b.CreatedAt, a.Id, b.Id)
	})
	slices.SortStableFunc(st.ContainerStatuses, func(a, b *runtimeapi.ContainerStatus) int {
		return cmpNewest(a.CreatedAt, b.CreatedAt, a.Id, b.Id)
	})
	if len(st.SandboxStatuses) > 0 {
		newest := st.SandboxStatuses[0]
		st.Name = newest.GetMetadata().GetName()
		st.Namespace = newest.GetMetadata().GetNamespace()
		if newest.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			st.IPs = SandboxIPs(newest)
		}
	}
	st.IPs = keepIPs(st, prevIPs)
}

// keepIPs is the IP preservation policy: the new IPs if any, else the
// previous ones unless a sandbox is ready (a ready sandbox without IPs is
// host-network or not yet wired, and must not inherit stale IPs).
func keepIPs(st *PodStatus, prevIPs []string) []string {
	if len(st.IPs) > 0 || len(prevIPs) == 0 {
		return st.IPs
	}
	for _, s := range st.SandboxStatuses {
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			return st.IPs
		}
	}
	return prevIPs
}

// cmpNewest orders by creation time, newest first, then by ID.
func cmpNewest(ta, tb int64, ida, idb string) int {
	switch {
	case ta > tb:
		return -1
	case ta < tb:
		return 1
	case ida < idb:
		return -1
	case ida > idb:
		return 1
	}
	return 0
}
