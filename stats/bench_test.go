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
func benchHost(b *testing.B, pods, containers int) (*host, *Provider) {
	h := newHost(b, true)
	h.rt.NoCopy = true
	h.rt.Update(func(s *statstest.State) {
		for i := range pods {
			addPod(s, fmt.Sprintf("pod-%03d", i), containers, true)
		}
	})
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
	for _, full := range []bool{true, false} {
		name := map[bool]string{true: "Get", false: "GetCPUAndMemoryStats"}[full]
		b.Run(name+"/110pods_x2", func(b *testing.B) {
			h, p := benchHost(b, 110, 2)
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				advance(h, i)
				i++
				s, err := p.summary(ctx, full)
				if err != nil || len(s.Pods) != 110 || s.Pods[0].Containers[0].CPU.UsageNanoCores == nil {
					b.Fatal("bad summary", err)
				}
			}
		})
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
