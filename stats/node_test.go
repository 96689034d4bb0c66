package stats

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func sysContainer(t *testing.T, s *statsapi.Summary, name string) *statsapi.ContainerStats {
	t.Helper()
	for i := range s.Node.SystemContainers {
		if s.Node.SystemContainers[i].Name == name {
			return &s.Node.SystemContainers[i]
		}
	}
	return nil
}

func sysNames(s *statsapi.Summary) []string {
	var out []string
	for _, c := range s.Node.SystemContainers {
		out = append(out, c.Name)
	}
	return out
}

// TestNodeStats reads a cgroup v1 and a v2 host: node CPU and its rate,
// memory, swap, network, PID limits, and the system containers.
func TestNodeStats(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		t.Run(map[bool]string{false: "cgroup v1", true: "cgroup v2"}[v2], func(t *testing.T) {
			ctx := context.Background()
			h := newHost(t, v2)
			p := h.provider(func(c *Config) { c.AllocatableMemory = 3 * Gi })

			s, err := p.Get(ctx)
			require.NoError(t, err)
			n := s.Node
			require.Equal(t, "n1", n.NodeName)
			require.Equal(t, int64(bootUnix), n.StartTime.Unix(), "boot time")

			require.Equal(t, uint64(40*time.Second), *n.CPU.UsageCoreNanoSeconds, "root cgroup")
			require.Nil(t, n.CPU.UsageNanoCores, "one sample")
			require.Equal(t, epoch, n.CPU.Time.Time.UTC())

			m := n.Memory
			// cadvisor's root container: v1 the root's usage (4Gi) less
			// total_inactive_file (a tenth); v2 anon (2Gi) + file (5) less
			// inactive_file. Available is MemTotal (8Gi) − working set.
			usage, ws := uint64(4*Gi), uint64(4*Gi-4*Gi/10)
			if v2 {
				usage, ws = 2*Gi+5, 2*Gi+5-4*Gi/10
			}
			require.Equal(t, usage, *m.UsageBytes, "the root cgroup's usage")
			require.Equal(t, ws, *m.WorkingSetBytes, "usage − inactive file")
			require.Equal(t, 8*Gi-ws, *m.AvailableBytes, "MemTotal − working set")
			require.Equal(t, uint64(2*Gi), *m.RSSBytes, "root memory.stat: half the usage")
			require.Equal(t, uint64(77), *m.PageFaults)
			require.Equal(t, uint64(7), *m.MajorPageFaults)
			require.Equal(t, uint64(256*Mi), *n.Swap.SwapUsageBytes)
			require.Equal(t, uint64(768*Mi), *n.Swap.SwapAvailableBytes)

			require.NotNil(t, n.Network)
			require.Equal(t, "eth0", n.Network.Name, "the default interface")
			require.Equal(t, uint64(136236822), *n.Network.RxBytes)
			require.Equal(t, uint64(3), *n.Network.RxErrors)
			require.Equal(t, uint64(604504), *n.Network.TxBytes)
			require.Equal(t, uint64(4), *n.Network.TxErrors)
			var names []string
			for _, i := range n.Network.Interfaces {
				names = append(names, i.Name)
			}
			require.Equal(t, []string{"eth0", "cni0"}, names, "lo and veths are not the node's")

			require.Equal(t, int64(126000), *n.Rlimit.MaxPID)
			require.Equal(t, int64(812), *n.Rlimit.NumOfRunningProcesses)
			require.NotNil(t, n.Fs.CapacityBytes)
			require.Same(t, n.Fs, n.Runtime.ImageFs)

			require.Equal(t, []string{"kubelet", "runtime", "pods"}, sysNames(s))
			kubelet := sysContainer(t, s, statsapi.SystemContainerKubelet)
			require.Equal(t, epoch, kubelet.StartTime.Time.UTC(), "the provider's creation")
			require.Equal(t, uint64(2*time.Second), *kubelet.CPU.UsageCoreNanoSeconds)
			require.Equal(t, uint64(100*Mi), *kubelet.Memory.UsageBytes)
			require.Equal(t, uint64(90*Mi), *kubelet.Memory.WorkingSetBytes, "usage − inactive_file")
			require.Equal(t, uint64(50*Mi), *kubelet.Memory.RSSBytes)
			require.Nil(t, kubelet.Memory.AvailableBytes, "unlimited")
			require.Equal(t, uint64(4096), *kubelet.Swap.SwapUsageBytes)
			require.Nil(t, kubelet.Swap.SwapAvailableBytes)
			require.Nil(t, kubelet.Rootfs)
			runtime := sysContainer(t, s, statsapi.SystemContainerRuntime)
			require.False(t, runtime.StartTime.IsZero(), "the cgroup's age")
			require.Equal(t, uint64(180*Mi), *runtime.Memory.WorkingSetBytes)
			pods := sysContainer(t, s, statsapi.SystemContainerPods)
			require.Equal(t, uint64(Gi-Gi/10), *pods.Memory.WorkingSetBytes)
			require.Equal(t, uint64(3*Gi-(Gi-Gi/10)), *pods.Memory.AvailableBytes, "AllocatableMemory − working set")

			// Ten seconds and 5 CPU-seconds later the node used half a core.
			h.clock.Step(10 * time.Second)
			h.setCgroup("/", 45*time.Second, 0, 0)
			h.setCgroup(h.runtimeCg, 4*time.Second, 200*Mi, 0)
			s, err = p.Get(ctx)
			require.NoError(t, err)
			require.Equal(t, uint64(500_000_000), *s.Node.CPU.UsageNanoCores)
			require.Equal(t, uint64(100_000_000), *sysContainer(t, s, statsapi.SystemContainerRuntime).CPU.UsageNanoCores)
			require.Equal(t, uint64(0), *sysContainer(t, s, statsapi.SystemContainerKubelet).CPU.UsageNanoCores)
		})
	}
}

func TestNodeCPUFromProcStat(t *testing.T) {
	h := newHost(t, true)
	require.NoError(t, os.RemoveAll(h.cg))
	p := h.provider()
	s, err := p.Get(context.Background())
	require.NoError(t, err)
	require.Equal(t, uint64(1100*time.Second), *s.Node.CPU.UsageCoreNanoSeconds, "user + system")
	require.Empty(t, s.Node.SystemContainers, "no cgroups: left out, not an error")
	require.Nil(t, s.Node.Memory.RSSBytes)

	h.clock.Step(20 * time.Second)
	h.setProcStat(1020, 120) // 40 CPU-seconds in 20s
	s, err = p.Get(context.Background())
	require.NoError(t, err)
	require.Equal(t, uint64(2_000_000_000), *s.Node.CPU.UsageNanoCores)
}

func TestNodeWithoutOptionalFiles(t *testing.T) {
	h := newHost(t, true)
	for _, f := range []string{"stat", "1/net/dev", "self/cgroup"} {
		require.NoError(t, os.Remove(filepath.Join(h.proc, f)))
	}
	h.write(h.proc, "meminfo", "MemTotal: 1024 kB\nMemFree: 512 kB\nMemAvailable: 768 kB\n")
	require.NoError(t, os.RemoveAll(filepath.Join(h.cg, h.runtimeCg)))
	p := h.provider()
	s, err := p.Get(context.Background())
	require.NoError(t, err)
	require.True(t, s.Node.StartTime.IsZero(), "no btime")
	require.Nil(t, s.Node.Swap, "no swap lines")
	require.Nil(t, s.Node.Network)
	require.Equal(t, uint64(40*time.Second), *s.Node.CPU.UsageCoreNanoSeconds)
	require.Equal(t, []string{"pods"}, sysNames(s), "the kubelet's cgroup is unknown; containerd's is gone")

	h.write(h.proc, "meminfo", "MemTotal: 0 kB\n")
	_, err = p.Get(context.Background())
	require.ErrorContains(t, err, "no usable MemTotal/MemAvailable")
	_, err = p.GetCPUAndMemoryStats(context.Background())
	require.Error(t, err, "node memory is required")
}

func TestGetCPUAndMemoryStatsIsLean(t *testing.T) {
	h := newHost(t, false)
	h.rt.Update(func(s *statstestState) { addPod(s, "web", 2, true) })
	p := h.provider(func(c *Config) { c.PodLogsDir = t.TempDir() })
	s, err := p.GetCPUAndMemoryStats(context.Background())
	require.NoError(t, err)
	require.NotNil(t, s.Node.CPU)
	require.NotNil(t, s.Node.Memory)
	require.NotNil(t, s.Node.Swap)
	require.Nil(t, s.Node.Fs)
	require.Nil(t, s.Node.Runtime)
	require.Nil(t, s.Node.Rlimit)
	require.Nil(t, s.Node.Network)
	require.Len(t, s.Node.SystemContainers, 3)
	require.Len(t, s.Pods, 1)
	require.Len(t, s.Pods[0].Containers, 2)
	for _, c := range s.Pods[0].Containers {
		require.NotNil(t, c.CPU)
		require.NotNil(t, c.Memory)
		require.Nil(t, c.Rootfs)
		require.Nil(t, c.Logs)
	}
	require.Nil(t, s.Pods[0].EphemeralStorage)
}

func TestSelfCgroup(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		v2            bool
		want, err     string
	}{
		{name: "v2", content: "0::/system.slice/kubelet.service\n", v2: true, want: "/system.slice/kubelet.service"},
		{name: "v2 without unified line", content: "1:name=systemd:/x\n", v2: true, err: "no unified cgroup"},
		{name: "v1 cpu = memory", content: "4:memory:/k\n3:cpu,cpuacct:/k\n", want: "/k"},
		{name: "v1 systemd wins", content: "4:memory:/k\n3:cpu,cpuacct:/k\n1:name=systemd:/user.slice/s.scope\n", want: "/user.slice/s.scope"},
		{name: "v1 not unified", content: "4:memory:/a\n3:cpu:/b\n", err: "not unified"},
		{name: "v1 no memory", content: "3:cpu:/b\n", err: "no cpu or memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "self"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "self", "cgroup"), []byte(tc.content), 0o644))
			got, err := selfCgroup(dir, tc.v2)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestReadNetDevRejectsGarbage(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "net"), 0o755))
	head := "h1\nh2\n"
	for _, body := range []string{"eth0 1 2 3\n", "eth0: 1 2 3\n", "eth0: x 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "net", "dev"), []byte(head+body), 0o644))
		_, err := readNetDev(dir)
		require.Error(t, err, body)
	}
}

func TestCgroupLimits(t *testing.T) {
	h := newHost(t, true)
	h.write(h.cg, h.podsCg+"/memory.swap.max", "1048576\n")
	h.write(h.cg, h.podsCg+"/memory.swap.current", "1024\n")
	st, err := detectCgroupFS(h.cg).read(h.podsCg)
	require.NoError(t, err)
	require.Equal(t, uint64(4*Gi), *st.memory.limit)
	require.Equal(t, uint64(1024), *st.swap)
	require.Equal(t, uint64(1048576), *st.swapLimit)
	cs := h.provider().cgroupContainer("pods", h.podsCg, st, epoch, time.Time{}, true)
	require.Equal(t, uint64(4*Gi-(Gi-Gi/10)), *cs.Memory.AvailableBytes)
	require.Equal(t, uint64(1048576-1024), *cs.Swap.SwapAvailableBytes)

	h.write(h.cg, h.podsCg+"/memory.max", "garbage\n")
	_, err = detectCgroupFS(h.cg).read(h.podsCg)
	require.Error(t, err)
	_, err = detectCgroupFS(h.cg).read("/nope")
	require.ErrorIs(t, err, errNoCgroup)
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []Config{
		{AllocatableMemory: -1},
		{CPUSampleInterval: -time.Second},
		{RuntimeCgroup: "/../etc"},
	} {
		_, err := New(cfg)
		require.ErrorIs(t, err, ErrInvalidConfig, "%+v", cfg)
	}
	p, err := New(Config{PodsCgroup: "kubepods.slice/"})
	require.NoError(t, err)
	require.Equal(t, "/kubepods.slice", p.cfg.PodsCgroup)
	require.Equal(t, DefaultCPUSampleInterval, p.cfg.CPUSampleInterval)
	require.Equal(t, DefaultNodeFsPath, p.cfg.NodeFsPath)
}
