package stats

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit/nodekit/stats/statstest"
)

type statstestState = statstest.State

var (
	sandboxID   = statstest.SandboxID
	containerID = statstest.ContainerID
)

// addPod adds pod name (UID uid-<name>, namespace default, created an hour
// before epoch) with n containers c0…, each with 10Mi working set and no
// CPU used yet at epoch.
func addPod(s *statstest.State, name string, n int, embed bool) {
	var cs []string
	for i := range n {
		cs = append(cs, fmt.Sprintf("c%d", i))
	}
	uid := "uid-" + name
	s.AddPod(statstest.Pod{Name: name, Namespace: "default", UID: uid, CreatedAt: epoch.Add(-time.Hour).UnixNano(),
		Containers: cs, Embed: embed})
	for _, c := range cs {
		st := s.ContainerStatsOf(containerID(uid, c))
		st.Cpu = statstest.CPU(epoch.UnixNano(), 0)
		st.Memory = statstest.Memory(epoch.UnixNano(), 10*Mi)
	}
}

// setCPU sets a container's cumulative CPU time at t.
func setCPU(s *statstest.State, id string, t time.Time, used time.Duration) {
	s.ContainerStatsOf(id).Cpu = statstest.CPU(t.UnixNano(), uint64(used))
}

func podByName(t *testing.T, s *statsapi.Summary, name string) *statsapi.PodStats {
	t.Helper()
	for i := range s.Pods {
		if s.Pods[i].PodRef.Name == name {
			return &s.Pods[i]
		}
	}
	t.Fatalf("pod %s not in summary", name)
	return nil
}

func containerByName(t *testing.T, p *statsapi.PodStats, name string) *statsapi.ContainerStats {
	t.Helper()
	for i := range p.Containers {
		if p.Containers[i].Name == name {
			return &p.Containers[i]
		}
	}
	t.Fatalf("container %s not in pod %s", name, p.PodRef.Name)
	return nil
}

// TestPodCPURates: usageNanoCores from successive cumulative samples of a
// container, the runtime's own figure when it gives one, and the pod's from
// its sandbox or else the sum of its containers.
func TestPodCPURates(t *testing.T) {
	for _, embed := range []bool{true, false} {
		t.Run(fmt.Sprintf("embedded container stats %v", embed), func(t *testing.T) {
			ctx := context.Background()
			h := newHost(t, true)
			h.rt.Update(func(s *statstest.State) {
				addPod(s, "web", 2, embed)
				addPod(s, "db", 1, embed)
				// The db sandbox reports its own CPU, with a rate.
				s.SandboxStatsOf(sandboxID("uid-db")).Linux.Cpu = &runtimeapi.CpuUsage{Timestamp: epoch.UnixNano(),
					UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: 5e9}, UsageNanoCores: &runtimeapi.UInt64Value{Value: 123}}
			})
			p := h.provider()
			s, err := p.Get(ctx)
			require.NoError(t, err)
			require.Len(t, s.Pods, 2)
			web := podByName(t, s, "web")
			require.Equal(t, epoch.Add(-time.Hour), web.StartTime.Time.UTC(), "the sandbox's creation")
			c0 := containerByName(t, web, "c0")
			require.Equal(t, epoch.Add(-time.Hour+time.Nanosecond), c0.StartTime.Time.UTC(), "the container's creation")
			require.Equal(t, uint64(0), *c0.CPU.UsageCoreNanoSeconds)
			require.Nil(t, c0.CPU.UsageNanoCores, "one sample")
			require.Nil(t, web.CPU.UsageNanoCores, "no container has a rate yet")
			require.Equal(t, uint64(0), *web.CPU.UsageCoreNanoSeconds, "summed")
			require.Equal(t, uint64(20*Mi), *web.Memory.WorkingSetBytes, "summed")
			db := podByName(t, s, "db")
			require.Equal(t, uint64(123), *db.CPU.UsageNanoCores, "the runtime's")
			require.Equal(t, uint64(5e9), *db.CPU.UsageCoreNanoSeconds)

			// 5s later: shorter than the sample interval, no rate yet.
			h.clock.Step(5 * time.Second)
			t5 := epoch.Add(5 * time.Second)
			h.rt.Update(func(s *statstest.State) { setCPU(s, containerID("uid-web", "c0"), t5, time.Second) })
			s, err = p.Get(ctx)
			require.NoError(t, err)
			require.Nil(t, containerByName(t, podByName(t, s, "web"), "c0").CPU.UsageNanoCores)

			// 10s after the first sample: c0 used 2s of CPU, c1 none.
			t10 := epoch.Add(10 * time.Second)
			h.rt.Update(func(s *statstest.State) {
				setCPU(s, containerID("uid-web", "c0"), t10, 2*time.Second)
				setCPU(s, containerID("uid-web", "c1"), t10, 0)
			})
			s, err = p.Get(ctx)
			require.NoError(t, err)
			web = podByName(t, s, "web")
			require.Equal(t, uint64(200_000_000), *containerByName(t, web, "c0").CPU.UsageNanoCores)
			require.Equal(t, uint64(0), *containerByName(t, web, "c1").CPU.UsageNanoCores)
			require.Equal(t, uint64(200_000_000), *web.CPU.UsageNanoCores)
			require.Equal(t, uint64(2e9), *web.CPU.UsageCoreNanoSeconds)
			require.Equal(t, t10, web.CPU.Time.Time.UTC(), "the newest container sample")

			// The same samples again (a runtime that caches its stats):
			// the cached rate.
			s, err = p.GetCPUAndMemoryStats(ctx)
			require.NoError(t, err)
			require.Equal(t, uint64(200_000_000), *podByName(t, s, "web").CPU.UsageNanoCores)
		})
	}
}

// TestPodCPUFromSandboxCounter: a sandbox reporting only its cumulative
// counter gets a rate from the cache too.
func TestPodCPUFromSandboxCounter(t *testing.T) {
	h := newHost(t, true)
	sb := sandboxID("uid-web")
	h.rt.Update(func(s *statstest.State) {
		addPod(s, "web", 1, true)
		s.SandboxStatsOf(sb).Linux.Cpu = statstest.CPU(epoch.UnixNano(), 1e9)
		s.SandboxStatsOf(sb).Linux.Memory = statstest.Memory(epoch.UnixNano(), 64*Mi)
	})
	p := h.provider(func(c *Config) { c.CPUSampleInterval = time.Second })
	_, err := p.Get(context.Background())
	require.NoError(t, err)
	h.rt.Update(func(s *statstest.State) {
		s.SandboxStatsOf(sb).Linux.Cpu = statstest.CPU(epoch.Add(2*time.Second).UnixNano(), 2e9)
	})
	s, err := p.Get(context.Background())
	require.NoError(t, err)
	require.Equal(t, uint64(500_000_000), *s.Pods[0].CPU.UsageNanoCores)
	require.Equal(t, uint64(64*Mi), *s.Pods[0].Memory.WorkingSetBytes, "the sandbox's, not the sum")
}

// TestPodFaults: what the runtime does between and within calls never
// yields a negative rate or a panic.
func TestPodFaults(t *testing.T) {
	ctx := context.Background()
	web0, web1 := containerID("uid-web", "c0"), containerID("uid-web", "c1")

	t.Run("container exits between list and stats", func(t *testing.T) {
		h := newHost(t, true)
		h.rt.Update(func(s *statstest.State) { addPod(s, "web", 2, true) })
		h.rt.BeforeCall = func(m string) {
			if m == statstest.ListPodSandboxStats {
				// c1 is gone: its stats are not reported any more.
				h.rt.Update(func(s *statstest.State) {
					sb := s.SandboxStatsOf(sandboxID("uid-web"))
					sb.Linux.Containers = sb.Linux.Containers[:1]
				})
			}
		}
		s, err := h.provider().Get(ctx)
		require.NoError(t, err)
		require.Len(t, s.Pods[0].Containers, 1)
		require.Equal(t, uint64(10*Mi), *s.Pods[0].Memory.WorkingSetBytes)
	})

	t.Run("container listed by stats but exited before", func(t *testing.T) {
		h := newHost(t, true)
		h.rt.Update(func(s *statstest.State) {
			addPod(s, "web", 2, false)
			s.ContainerOf(web1).State = runtimeapi.ContainerState_CONTAINER_EXITED
		})
		s, err := h.provider().Get(ctx)
		require.NoError(t, err)
		require.Len(t, s.Pods[0].Containers, 1, "exited containers are not counted")
		require.Equal(t, "c0", s.Pods[0].Containers[0].Name)
	})

	t.Run("container started after the listing", func(t *testing.T) {
		h := newHost(t, true)
		h.rt.Update(func(s *statstest.State) { addPod(s, "web", 1, true) })
		h.rt.BeforeCall = func(m string) {
			if m == statstest.ListPodSandboxStats {
				h.rt.Update(func(s *statstest.State) { addPod(s, "late", 1, true) })
			}
		}
		s, err := h.provider().Get(ctx)
		require.NoError(t, err)
		require.Len(t, s.Pods, 1, "a sandbox not listed is skipped")
	})

	t.Run("counter reset after a restart", func(t *testing.T) {
		h := newHost(t, true)
		h.rt.Update(func(s *statstest.State) {
			addPod(s, "web", 1, true)
			setCPU(s, web0, epoch, 50*time.Second)
		})
		p := h.provider()
		_, err := p.Get(ctx)
		require.NoError(t, err)
		// Same container ID, lower counter (a runtime that reuses IDs).
		h.rt.Update(func(s *statstest.State) { setCPU(s, web0, epoch.Add(10*time.Second), time.Second) })
		s, err := p.Get(ctx)
		require.NoError(t, err)
		require.Nil(t, s.Pods[0].Containers[0].CPU.UsageNanoCores, "no rate across a reset")
		require.Equal(t, uint64(time.Second), *s.Pods[0].Containers[0].CPU.UsageCoreNanoSeconds)
		h.rt.Update(func(s *statstest.State) { setCPU(s, web0, epoch.Add(20*time.Second), 6*time.Second) })
		s, err = p.Get(ctx)
		require.NoError(t, err)
		require.Equal(t, uint64(500_000_000), *s.Pods[0].Containers[0].CPU.UsageNanoCores)
	})

	t.Run("restart with a new container ID", func(t *testing.T) {
		h := newHost(t, true)
		h.rt.Update(func(s *statstest.State) {
			addPod(s, "web", 1, true)
			setCPU(s, web0, epoch, 50*time.Second)
		})
		p := h.provider()
		_, err := p.Get(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, p.podRates.len())
		h.rt.Update(func(s *statstest.State) {
			*s = statstest.State{}
			addPod(s, "web", 1, true)
			newID := "c-restarted"
			s.Containers[0].Id = newID
			st := s.ContainerStatsOf(web0)
			st.Attributes.Id = newID
			st.Cpu = statstest.CPU(epoch.Add(10*time.Second).UnixNano(), uint64(time.Second))
		})
		s, err := p.Get(ctx)
		require.NoError(t, err)
		require.Nil(t, s.Pods[0].Containers[0].CPU.UsageNanoCores, "a new counter")
		require.Equal(t, 1, p.podRates.len(), "the old container's sample is pruned")
	})

	t.Run("runtime clock goes back", func(t *testing.T) {
		h := newHost(t, true)
		h.rt.Update(func(s *statstest.State) { addPod(s, "web", 1, true) })
		p := h.provider()
		_, err := p.Get(ctx)
		require.NoError(t, err)
		h.rt.Update(func(s *statstest.State) { setCPU(s, web0, epoch.Add(-time.Minute), time.Second) })
		s, err := p.Get(ctx)
		require.NoError(t, err)
		require.Nil(t, s.Pods[0].Containers[0].CPU.UsageNanoCores)
	})

	t.Run("runtime omits fields", func(t *testing.T) {
		h := newHost(t, true)
		h.rt.Update(func(s *statstest.State) {
			addPod(s, "web", 2, true)
			c0 := s.ContainerStatsOf(web0)
			c0.Cpu, c0.Memory = nil, nil
			c0.Attributes.Metadata = nil
			c1 := s.ContainerStatsOf(web1)
			c1.Cpu = &runtimeapi.CpuUsage{} // no timestamp, no values
			c1.Memory = &runtimeapi.MemoryUsage{}
			// A sandbox stats entry with no attributes, one with no Linux
			// part, and a nil one.
			s.SandboxStats = append(s.SandboxStats, &runtimeapi.PodSandboxStats{}, nil)
			addPod(s, "bare", 1, true)
			s.SandboxStatsOf(sandboxID("uid-bare")).Linux = nil
			s.Sandboxes = append(s.Sandboxes, &runtimeapi.PodSandbox{Id: "no-metadata"}, nil)
			s.Containers = append(s.Containers, nil)
			s.ContainerStats = append(s.ContainerStats, nil, &runtimeapi.ContainerStats{})
		})
		p := h.provider()
		for range 2 {
			s, err := p.Get(ctx)
			require.NoError(t, err)
			require.Len(t, s.Pods, 2)
			web := podByName(t, s, "web")
			c0 := containerByName(t, web, "c0")
			require.Equal(t, uint64(0), *c0.CPU.UsageCoreNanoSeconds, "zeros, as the kubelet")
			require.Equal(t, uint64(0), *c0.CPU.UsageNanoCores)
			require.Equal(t, uint64(0), *c0.Memory.WorkingSetBytes)
			require.Equal(t, h.clock.Now(), c0.CPU.Time.Time)
			c1 := containerByName(t, web, "c1")
			require.Nil(t, c1.CPU.UsageCoreNanoSeconds)
			require.Nil(t, c1.CPU.UsageNanoCores)
			require.Nil(t, c1.Memory.WorkingSetBytes)
			require.Equal(t, h.clock.Now(), c1.Memory.Time.Time, "no timestamp: now")
			require.NotNil(t, c1.Swap.SwapUsageBytes)
			require.Nil(t, web.CPU.UsageNanoCores, "c1 has no rate")
			bare := podByName(t, s, "bare")
			require.Len(t, bare.Containers, 1, "from ListContainerStats")
			h.clock.Step(10 * time.Second)
		}
	})

	t.Run("sandbox stats unsupported", func(t *testing.T) {
		h := newHost(t, true)
		h.rt.Update(func(s *statstest.State) {
			addPod(s, "web", 2, true)
			addPod(s, "db", 1, true)
			s.Sandboxes[1].CreatedAt -= int64(time.Hour) // db is older
		})
		h.rt.SetError(statstest.ListPodSandboxStats, errors.New("unimplemented"))
		s, err := h.provider().Get(ctx)
		require.NoError(t, err)
		require.Len(t, s.Pods, 2)
		require.Equal(t, "db", s.Pods[0].PodRef.Name, "ordered by creation")
		require.Equal(t, uint64(20*Mi), *podByName(t, s, "web").Memory.WorkingSetBytes, "summed from containers")
		require.Equal(t, 1, h.rt.Calls(statstest.ListContainerStats))
	})

	t.Run("no container stats either", func(t *testing.T) {
		h := newHost(t, true)
		h.rt.Update(func(s *statstest.State) { addPod(s, "web", 1, false) })
		h.rt.SetError(statstest.ListContainerStats, errors.New("boom"))
		s, err := h.provider().Get(ctx)
		require.NoError(t, err, "node-level stats stand")
		require.Empty(t, s.Pods)
		require.NotNil(t, s.Node.Memory)
	})

	for _, m := range []string{statstest.ListContainers, statstest.ListPodSandbox} {
		t.Run(m+" fails", func(t *testing.T) {
			h := newHost(t, true)
			h.rt.Update(func(s *statstest.State) { addPod(s, "web", 1, true) })
			h.rt.SetError(m, errors.New("boom"))
			s, err := h.provider().Get(ctx)
			require.NoError(t, err)
			require.Empty(t, s.Pods)
		})
	}
}

// TestRecreatedSandbox: of two sandboxes of one pod, the ready one counts,
// or the newest if none is ready (the kubelet's removeTerminatedPods).
func TestRecreatedSandbox(t *testing.T) {
	h := newHost(t, true)
	h.rt.Update(func(s *statstest.State) {
		addPod(s, "web", 1, true)
		s.Sandboxes[0].State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		addPod(s, "web", 1, true)
		s.Sandboxes[1].Id = "sb-new"
		s.Sandboxes[1].CreatedAt++
		s.SandboxStats[1].Attributes.Id = "sb-new"
		s.Sandboxes[1].Metadata.Uid = "uid-web-2"
		s.Containers[1].Id = "c-new"
		s.Containers[1].PodSandboxId = "sb-new"
		s.ContainerStats[1].Attributes.Id = "c-new"
	})
	p := h.provider()
	s, err := p.Get(context.Background())
	require.NoError(t, err)
	require.Len(t, s.Pods, 1)
	require.Equal(t, "uid-web-2", s.Pods[0].PodRef.UID)

	h.rt.Update(func(s *statstest.State) { s.Sandboxes[1].State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY })
	s, err = p.Get(context.Background())
	require.NoError(t, err)
	require.Len(t, s.Pods, 1)
	require.Equal(t, "uid-web-2", s.Pods[0].PodRef.UID, "the newest")
}

func TestPodNetworkSwapAndStorage(t *testing.T) {
	h := newHost(t, true)
	sb := sandboxID("uid-web")
	h.rt.Update(func(s *statstest.State) {
		addPod(s, "web", 2, true)
		s.SandboxStatsOf(sb).Linux.Network = &runtimeapi.NetworkUsage{Timestamp: epoch.UnixNano(),
			DefaultInterface: &runtimeapi.NetworkInterfaceUsage{Name: "eth0", RxBytes: &runtimeapi.UInt64Value{Value: 10}},
			Interfaces: []*runtimeapi.NetworkInterfaceUsage{
				{Name: "eth0", RxBytes: &runtimeapi.UInt64Value{Value: 10}, TxBytes: &runtimeapi.UInt64Value{Value: 20}}}}
		s.SandboxStatsOf(sb).Linux.Process = &runtimeapi.ProcessUsage{ProcessCount: &runtimeapi.UInt64Value{Value: 3}}
		for _, c := range []string{"c0", "c1"} {
			st := s.ContainerStatsOf(containerID("uid-web", c))
			st.Swap = &runtimeapi.SwapUsage{Timestamp: epoch.UnixNano(), SwapUsageBytes: &runtimeapi.UInt64Value{Value: 100},
				SwapAvailableBytes: &runtimeapi.UInt64Value{Value: 900}}
			st.WritableLayer = &runtimeapi.FilesystemUsage{Timestamp: epoch.UnixNano(),
				UsedBytes: &runtimeapi.UInt64Value{Value: Mi}, InodesUsed: &runtimeapi.UInt64Value{Value: 5}}
		}
	})
	p := h.provider(func(c *Config) {
		c.PodVolumes = func(uid string) []PodVolume {
			return []PodVolume{{Name: "scratch", UsedBytes: 2 * Mi, InodesUsed: 1, LocalEphemeral: true, Time: epoch}}
		}
	})
	s, err := p.Get(context.Background())
	require.NoError(t, err)
	web := s.Pods[0]
	require.Equal(t, "eth0", web.Network.Name)
	require.Equal(t, uint64(10), *web.Network.RxBytes)
	require.Len(t, web.Network.Interfaces, 1)
	require.Equal(t, uint64(3), *web.ProcessStats.ProcessCount)
	require.Equal(t, uint64(200), *web.Swap.SwapUsageBytes)
	require.Equal(t, uint64(1800), *web.Swap.SwapAvailableBytes)
	c0 := web.Containers[0]
	require.Equal(t, uint64(Mi), *c0.Rootfs.UsedBytes)
	require.Equal(t, *s.Node.Runtime.ContainerFs.CapacityBytes, *c0.Rootfs.CapacityBytes)
	require.Equal(t, uint64(4*Mi), *web.EphemeralStorage.UsedBytes, "two layers and the emptyDir")
	require.Equal(t, uint64(11), *web.EphemeralStorage.InodesUsed)
	require.Equal(t, *s.Node.Fs.CapacityBytes, *web.EphemeralStorage.CapacityBytes)
}
