package stats

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nodekit/nodekit/stats/statstest"
)

// benchHost is a cgroup v2 host with pods × containers running pods whose
// sandboxes embed their containers' stats (containerd's shape), reporting
// cumulative CPU only, so every container's rate comes from the cache.
// With cgroups each pod, sandbox and container has its cgroup (and the
// sandbox a process and network namespace), so their pressure and the
// pods' interfaces are read from files, as on a real node with a runtime
// that reports no PSI.
func benchHost(b *testing.B, pods, containers int, cgroups bool) (*host, *Provider) {
	h := newHost(b, true)
	h.rt.NoCopy = true
	h.rt.Update(func(s *statstest.State) {
		for i := range pods {
			addPod(s, fmt.Sprintf("pod-%03d", i), containers, true)
		}
	})
	if cgroups {
		for i := range pods {
			uid := fmt.Sprintf("uid-pod-%03d", i)
			podCg := h.podsCg + "/burstable/pod" + uid
			h.addCgroupDir(podCg)
			ids := []string{sandboxID(uid)}
			for c := range containers {
				ids = append(ids, containerID(uid, fmt.Sprintf("c%d", c)))
			}
			for _, id := range ids {
				h.addCgroupDir(podCg + "/" + id)
			}
			pid := 1000 + i
			h.setProcs(podCg+"/"+sandboxID(uid), pid)
			h.write(h.proc, itoa(pid)+"/net/dev", sandboxNetDev)
		}
	}
	p := h.provider(func(c *Config) { c.AllocatableMemory = 100 * Gi; c.CPUSampleInterval = time.Nanosecond })
	if _, err := p.Get(context.Background()); err != nil {
		b.Fatal(err)
	}
	return h, p
}

// advance moves every container's counter and timestamp on by one second.
func advance(h *host, i int) {
	at := epoch.Add(time.Duration(i+1) * time.Second)
	h.rt.Update(func(s *statstest.State) {
		for _, cs := range s.ContainerStats {
			cs.Cpu = statstest.CPU(at.UnixNano(), uint64(i+1)*5e8)
		}
	})
}

func BenchmarkGet(b *testing.B) {
	for _, cgroups := range []bool{false, true} {
		for _, full := range []bool{true, false} {
			name := map[bool]string{true: "Get", false: "GetCPUAndMemoryStats"}[full] + "/110pods_x2"
			if cgroups {
				name += "_cgroups"
			}
			b.Run(name, func(b *testing.B) {
				h, p := benchHost(b, 110, 2, cgroups)
				ctx := context.Background()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					advance(h, i)
					i++
					s, err := p.summary(ctx, full)
					if err != nil || len(s.Pods) != 110 || s.Pods[0].Containers[0].CPU.UsageNanoCores == nil ||
						cgroups && s.Pods[0].Containers[0].CPU.PSI == nil {
						b.Fatal("bad summary", err)
					}
				}
			})
		}
	}
}

func TestBenchHost(t *testing.T) {
	h := newHost(t, true)
	h.rt.Update(func(s *statstest.State) { addPod(s, "a", 2, true) })
	p := h.provider(func(c *Config) { c.CPUSampleInterval = time.Nanosecond })
	_, err := p.Get(context.Background())
	require.NoError(t, err)
	advance(h, 0)
	s, err := p.Get(context.Background())
	require.NoError(t, err)
	require.Equal(t, uint64(5e8), *s.Pods[0].Containers[0].CPU.UsageNanoCores)
}
