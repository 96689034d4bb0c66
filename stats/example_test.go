package stats_test

import (
	"context"
	"fmt"
	"os"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/stats"
	"github.com/nodekit/nodekit/stats/statstest"
)

// Example builds a Provider over the host's procfs and cgroups and a CRI
// runtime (here a fake one whose container reports only its cumulative CPU
// time, as some runtimes do), and reads the summary twice, ten seconds
// apart: the second read has the container's CPU rate.
func Example() {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

	// A real host passes its CRI RuntimeService (k8s.io/cri-client).
	rt := &statstest.Runtime{}
	id := statstest.ContainerID("u1", "app")
	sample := func(used time.Duration) {
		rt.Update(func(s *statstest.State) {
			s.ContainerStatsOf(id).Cpu = statstest.CPU(clk.Now().UnixNano(), uint64(used))
			s.ContainerStatsOf(id).Memory = statstest.Memory(clk.Now().UnixNano(), 64<<20)
		})
	}
	rt.Update(func(s *statstest.State) {
		s.AddPod(statstest.Pod{Name: "web", Namespace: "default", UID: "u1", Containers: []string{"app"}, Embed: true})
	})
	sample(30 * time.Second)

	p, err := stats.New(stats.Config{
		NodeName:   "node-1",
		NodeFsPath: os.TempDir(), // the kubelet's root directory on a real node
		Runtime:    rt,
		PodsCgroup: "/kubepods", // left out where it does not exist
		Clock:      clk,
	})
	if err != nil {
		panic(err)
	}
	// eviction.Config.Summary and kubeletapi.Config.Summary take p as is.

	for range 2 {
		s, err := p.Get(ctx)
		if err != nil {
			panic(err)
		}
		c := s.Pods[0].Containers[0]
		fmt.Printf("%s/%s: cpu %v, working set %dMi, rate known: %v\n", s.Pods[0].PodRef.Name, c.Name,
			time.Duration(*c.CPU.UsageCoreNanoSeconds), *c.Memory.WorkingSetBytes>>20, c.CPU.UsageNanoCores != nil)
		if r := c.CPU.UsageNanoCores; r != nil {
			fmt.Printf("usage: %dm cores\n", *r/1e6)
		}
		clk.Step(10 * time.Second)
		sample(35 * time.Second) // 5s of CPU in 10s
	}
	// Output:
	// web/app: cpu 30s, working set 64Mi, rate known: false
	// web/app: cpu 35s, working set 64Mi, rate known: true
	// usage: 500m cores
}
