package stats

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit/nodekit/stats/statstest"
)

func criIface(name string, rx uint64) *runtimeapi.NetworkInterfaceUsage {
	return &runtimeapi.NetworkInterfaceUsage{Name: name, RxBytes: &runtimeapi.UInt64Value{Value: rx},
		RxErrors: &runtimeapi.UInt64Value{Value: 1}, TxBytes: &runtimeapi.UInt64Value{Value: rx * 2}, TxErrors: &runtimeapi.UInt64Value{Value: 2}}
}

func ifaceNames(n *statsapi.NetworkStats) []string {
	var out []string
	for _, i := range n.Interfaces {
		out = append(out, i.Name)
	}
	return out
}

// sandboxNetDev is the sandbox's network namespace in the fixture: lo,
// eth0 and a second network's net1.
const sandboxNetDev = "Inter-|   Receive                                                |  Transmit\n" +
	" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" +
	"    lo: 500 5 0 0 0 0 0 0 500 5 0 0 0 0 0 0\n" +
	"  eth0: 7000 70 3 0 0 0 0 0 8000 80 4 0 0 0 0 0\n" +
	"  net1: 900 9 0 0 0 0 0 0 1100 11 1 0 0 0 0 0\n"

// TestPodNetworkInterfaces: the summary lists every interface of a pod,
// the default one also at the top level, whether the runtime reports only
// the default one (containerd), the others apart (as the CRI says), or the
// sandbox's network namespace can be read.
func TestPodNetworkInterfaces(t *testing.T) {
	ctx := context.Background()
	sb := sandboxID("uid-web")
	netAt := epoch.Add(-time.Second)
	setNetwork := func(h *host, n *runtimeapi.NetworkUsage) {
		h.rt.Update(func(s *statstest.State) { s.SandboxStatsOf(sb).Linux.Network = n })
	}
	// withNetns gives the sandbox a cgroup whose first process is PID 4242,
	// whose network namespace is sandboxNetDev.
	withNetns := func(h *host) {
		podCg := h.podsCg + "/poduid-web"
		h.addCgroupDir(podCg)
		h.addCgroupDir(podCg + "/" + sb)
		h.setProcs(podCg+"/"+sb, 4242, 4300)
		h.write(h.proc, "4242/net/dev", sandboxNetDev)
	}

	t.Run("the runtime's default interface only", func(t *testing.T) {
		h := newHost(t, true)
		h.rt.Update(func(s *statstest.State) { addPod(s, "web", 1, true) })
		setNetwork(h, &runtimeapi.NetworkUsage{Timestamp: netAt.UnixNano(), DefaultInterface: criIface("eth0", 10)})
		s, err := h.provider().Get(ctx)
		require.NoError(t, err)
		n := s.Pods[0].Network
		require.Equal(t, "eth0", n.Name)
		require.Equal(t, uint64(10), *n.RxBytes)
		require.Equal(t, []string{"eth0"}, ifaceNames(n))
		require.Equal(t, n.InterfaceStats, n.Interfaces[0])
		require.True(t, netAt.Equal(n.Time.Time))
	})

	t.Run("the runtime's others apart", func(t *testing.T) {
		h := newHost(t, true)
		h.rt.Update(func(s *statstest.State) { addPod(s, "web", 1, true) })
		setNetwork(h, &runtimeapi.NetworkUsage{Timestamp: netAt.UnixNano(), DefaultInterface: criIface("eth0", 10),
			Interfaces: []*runtimeapi.NetworkInterfaceUsage{criIface("net1", 20), criIface("eth0", 10)}})
		s, err := h.provider().Get(ctx)
		require.NoError(t, err)
		n := s.Pods[0].Network
		require.Equal(t, []string{"eth0", "net1"}, ifaceNames(n), "the default first, each once")
		require.Equal(t, uint64(20), *n.Interfaces[1].RxBytes)
	})

	for _, v2 := range []bool{false, true} {
		t.Run("the sandbox's network namespace, "+map[bool]string{false: "cgroup v1", true: "cgroup v2"}[v2], func(t *testing.T) {
			h := newHost(t, v2)
			h.rt.Update(func(s *statstest.State) { addPod(s, "web", 1, true) })
			setNetwork(h, &runtimeapi.NetworkUsage{Timestamp: netAt.UnixNano(), DefaultInterface: criIface("eth0", 10)})
			withNetns(h)
			p := h.provider()
			s, err := p.Get(ctx)
			require.NoError(t, err)
			n := s.Pods[0].Network
			require.Equal(t, []string{"eth0", "net1"}, ifaceNames(n), "every interface but loopback, as cadvisor")
			require.Equal(t, uint64(7000), *n.Interfaces[0].RxBytes)
			require.Equal(t, uint64(3), *n.Interfaces[0].RxErrors)
			require.Equal(t, uint64(8000), *n.Interfaces[0].TxBytes)
			require.Equal(t, uint64(4), *n.Interfaces[0].TxErrors)
			require.Equal(t, uint64(1100), *n.Interfaces[1].TxBytes)
			require.Equal(t, uint64(10), *n.RxBytes, "the top level is the runtime's default interface")
			require.True(t, netAt.Equal(n.Time.Time), "the runtime's time")

			s, err = p.GetCPUAndMemoryStats(ctx)
			require.NoError(t, err)
			require.Nil(t, s.Pods[0].Network)
		})
	}

	t.Run("no network from the runtime (host network)", func(t *testing.T) {
		h := newHost(t, true)
		h.rt.Update(func(s *statstest.State) { addPod(s, "web", 1, true) })
		withNetns(h)
		s, err := h.provider().Get(ctx)
		require.NoError(t, err)
		n := s.Pods[0].Network
		require.NotNil(t, n, "the sandbox's namespace, as the kubelet's from cadvisor")
		require.Equal(t, "eth0", n.Name)
		require.Equal(t, uint64(7000), *n.RxBytes)
		require.Equal(t, []string{"eth0", "net1"}, ifaceNames(n))
		require.Equal(t, epoch, n.Time.Time)
	})

	t.Run("a sandbox cgroup without processes", func(t *testing.T) {
		h := newHost(t, true)
		h.rt.Update(func(s *statstest.State) { addPod(s, "web", 1, true) })
		setNetwork(h, &runtimeapi.NetworkUsage{Timestamp: netAt.UnixNano(), DefaultInterface: criIface("eth0", 10)})
		withNetns(h)
		h.setProcs(h.podsCg + "/poduid-web/" + sb)
		s, err := h.provider().Get(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"eth0"}, ifaceNames(s.Pods[0].Network), "the runtime's")
		require.Equal(t, uint64(10), *s.Pods[0].Network.Interfaces[0].RxBytes)
	})

	t.Run("no sandbox stats", func(t *testing.T) {
		h := newHost(t, true)
		h.rt.Update(func(s *statstest.State) { addPod(s, "web", 1, true) })
		h.rt.SetError(statstest.ListPodSandboxStats, errors.New("unimplemented"))
		withNetns(h)
		s, err := h.provider().Get(ctx)
		require.NoError(t, err)
		web := s.Pods[0]
		require.Equal(t, []string{"eth0", "net1"}, ifaceNames(web.Network))
		podCg := h.podsCg + "/poduid-web"
		require.Equal(t, wantPSI(h.seed(podCg), psiCPU), web.CPU.PSI, "the pod cgroup's, on the summed CPU")
		requireIO(t, epoch, wantPSI(h.seed(podCg), psiIO), web.IO)
	})
}
