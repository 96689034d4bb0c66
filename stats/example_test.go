package stats_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

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

// ExampleNewCollector serves the kubelet's volume stats and container log
// families from a summary (here a fixed one; a host passes its Provider)
// on a Prometheus registry, as a kubelet serves them on /metrics.
func ExampleNewCollector() {
	ctx := context.Background() // the host's: its logger, its lifetime
	pvc := &statsapi.PVCReference{Namespace: "default", Name: "data-db-0"}
	summary := stats.SummaryProviderFunc(func(context.Context) (*statsapi.Summary, error) {
		return &statsapi.Summary{Pods: []statsapi.PodStats{{
			PodRef: statsapi.PodReference{Namespace: "default", Name: "db-0", UID: "u1"},
			VolumeStats: []statsapi.VolumeStats{
				{Name: "tmp", FsStats: statsapi.FsStats{UsedBytes: ptr.To[uint64](4096)}}, // no claim: not reported
				{Name: "data", PVCRef: pvc, FsStats: statsapi.FsStats{
					CapacityBytes: ptr.To[uint64](10 << 30), AvailableBytes: ptr.To[uint64](6 << 30), UsedBytes: ptr.To[uint64](4 << 30),
					Inodes: ptr.To[uint64](655360), InodesFree: ptr.To[uint64](655000), InodesUsed: ptr.To[uint64](360)}},
			},
			Containers: []statsapi.ContainerStats{{Name: "db", Logs: &statsapi.FsStats{UsedBytes: ptr.To[uint64](18432)}}},
		}}}, nil
	})

	c, err := stats.NewCollector(stats.CollectorConfig{Summary: summary, Context: ctx})
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			fmt.Printf("%s{%s} %g\n", f.GetName(), strings.Join(labels, ","), m.GetGauge().GetValue())
		}
	}
	// Output:
	// kubelet_container_log_filesystem_used_bytes{container=db,namespace=default,pod=db-0,uid=u1} 18432
	// kubelet_volume_stats_available_bytes{namespace=default,persistentvolumeclaim=data-db-0} 6.442450944e+09
	// kubelet_volume_stats_capacity_bytes{namespace=default,persistentvolumeclaim=data-db-0} 1.073741824e+10
	// kubelet_volume_stats_inodes{namespace=default,persistentvolumeclaim=data-db-0} 655360
	// kubelet_volume_stats_inodes_free{namespace=default,persistentvolumeclaim=data-db-0} 655000
	// kubelet_volume_stats_inodes_used{namespace=default,persistentvolumeclaim=data-db-0} 360
	// kubelet_volume_stats_used_bytes{namespace=default,persistentvolumeclaim=data-db-0} 4.294967296e+09
}
