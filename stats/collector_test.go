package stats

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/stats/statstest"
)

var epochTime = metav1.NewTime(epoch)

// The families of a volume, in the order of the expected texts below.
var volumeFamilies = []string{
	"kubelet_volume_stats_available_bytes",
	"kubelet_volume_stats_capacity_bytes",
	"kubelet_volume_stats_inodes",
	"kubelet_volume_stats_inodes_free",
	"kubelet_volume_stats_inodes_used",
	"kubelet_volume_stats_used_bytes",
	"kubelet_volume_stats_health_status_abnormal",
}

const volumeMetadata = `
# HELP kubelet_volume_stats_available_bytes [ALPHA] Number of available bytes in the volume
# TYPE kubelet_volume_stats_available_bytes gauge
# HELP kubelet_volume_stats_capacity_bytes [ALPHA] Capacity in bytes of the volume
# TYPE kubelet_volume_stats_capacity_bytes gauge
# HELP kubelet_volume_stats_inodes [ALPHA] Maximum number of inodes in the volume
# TYPE kubelet_volume_stats_inodes gauge
# HELP kubelet_volume_stats_inodes_free [ALPHA] Number of free inodes in the volume
# TYPE kubelet_volume_stats_inodes_free gauge
# HELP kubelet_volume_stats_inodes_used [ALPHA] Number of used inodes in the volume
# TYPE kubelet_volume_stats_inodes_used gauge
# HELP kubelet_volume_stats_used_bytes [ALPHA] Number of used bytes in the volume
# TYPE kubelet_volume_stats_used_bytes gauge
`

const abnormalMetadata = `
# HELP kubelet_volume_stats_health_status_abnormal [ALPHA] Abnormal volume health status. The count is either 1 or 0. 1 indicates the volume is unhealthy, 0 indicates volume is healthy
# TYPE kubelet_volume_stats_health_status_abnormal gauge
`

const logMetadata = `
# HELP kubelet_container_log_filesystem_used_bytes [ALPHA] Bytes used by the container's logs on the filesystem.
# TYPE kubelet_container_log_filesystem_used_bytes gauge
`

// volume is the figures of upstream's test rows, scaled by k, on claim
// (nil: none) with health (nil: unknown).
func volume(claim *statsapi.PVCReference, k uint64, abnormal *bool) statsapi.VolumeStats {
	v := statsapi.VolumeStats{Name: "test", PVCRef: claim, FsStats: statsapi.FsStats{
		Time:           epochTime,
		AvailableBytes: ptr.To(5663154176 * k), CapacityBytes: ptr.To(10434699264 * k), UsedBytes: ptr.To(4217896960 * k),
		InodesFree: ptr.To(655344 * k), Inodes: ptr.To(655360 * k), InodesUsed: ptr.To(16 * k),
	}}
	if abnormal != nil {
		v.VolumeHealthStats = &statsapi.VolumeHealthStats{Abnormal: *abnormal}
	}
	return v
}

func summaryOf(pods ...statsapi.PodStats) SummaryProviderFunc {
	return func(context.Context) (*statsapi.Summary, error) { return &statsapi.Summary{Pods: pods}, nil }
}

func newTestCollector(t *testing.T, src SummaryProvider) *Collector {
	t.Helper()
	c, err := NewCollector(CollectorConfig{Summary: src, Context: context.Background()})
	require.NoError(t, err)
	return c
}

// Upstream's rows (volume_stats_test.go, log_metrics_test.go) and a few of
// ours: only volumes with a claim, each claim once (the first pod's
// figures), health only when known, logs per container.
func TestCollector(t *testing.T) {
	claim := &statsapi.PVCReference{Name: "testpvc", Namespace: "testns"}
	pod := func(name string, vols ...statsapi.VolumeStats) statsapi.PodStats {
		return statsapi.PodStats{PodRef: statsapi.PodReference{Name: name, Namespace: "test-namespace", UID: "UID_test-pod"},
			StartTime: epochTime, VolumeStats: vols}
	}
	const claimSamples = `
kubelet_volume_stats_available_bytes{namespace="testns",persistentvolumeclaim="testpvc"} 5.663154176e+09
kubelet_volume_stats_capacity_bytes{namespace="testns",persistentvolumeclaim="testpvc"} 1.0434699264e+10
kubelet_volume_stats_inodes{namespace="testns",persistentvolumeclaim="testpvc"} 655360
kubelet_volume_stats_inodes_free{namespace="testns",persistentvolumeclaim="testpvc"} 655344
kubelet_volume_stats_inodes_used{namespace="testns",persistentvolumeclaim="testpvc"} 16
kubelet_volume_stats_used_bytes{namespace="testns",persistentvolumeclaim="testpvc"} 4.21789696e+09
`
	for _, tc := range []struct {
		name     string
		src      SummaryProvider
		families []string
		want     string
	}{{
		name: "upstream: a claim mounted by two pods, abnormal",
		src: summaryOf(pod("test-pod", volume(nil, 1, nil), volume(claim, 1, ptr.To(true))),
			pod("test-pod-2", volume(claim, 1, ptr.To(true)))),
		families: volumeFamilies,
		want: volumeMetadata + abnormalMetadata + claimSamples +
			`kubelet_volume_stats_health_status_abnormal{namespace="testns",persistentvolumeclaim="testpvc"} 1` + "\n",
	}, {
		name:     "upstream: health not known",
		src:      summaryOf(pod("test-pod", volume(nil, 1, nil), volume(claim, 1, nil))),
		families: volumeFamilies,
		want:     volumeMetadata + claimSamples,
	}, {
		name: "the first pod's figures win; healthy is 0; other claims and namespaces apart",
		src: summaryOf(pod("a", volume(claim, 1, ptr.To(false))),
			pod("b", volume(claim, 2, ptr.To(true)), volume(&statsapi.PVCReference{Name: "testpvc", Namespace: "other"}, 2, nil))),
		families: []string{"kubelet_volume_stats_inodes_used", "kubelet_volume_stats_health_status_abnormal"},
		want: `
# HELP kubelet_volume_stats_inodes_used [ALPHA] Number of used inodes in the volume
# TYPE kubelet_volume_stats_inodes_used gauge
kubelet_volume_stats_inodes_used{namespace="other",persistentvolumeclaim="testpvc"} 32
kubelet_volume_stats_inodes_used{namespace="testns",persistentvolumeclaim="testpvc"} 16
` + abnormalMetadata + `kubelet_volume_stats_health_status_abnormal{namespace="testns",persistentvolumeclaim="testpvc"} 0
`,
	}, {
		name: "figures the summary lacks are left out",
		src: summaryOf(pod("a", statsapi.VolumeStats{Name: "v", PVCRef: claim,
			FsStats: statsapi.FsStats{UsedBytes: ptr.To[uint64](7), InodesUsed: ptr.To[uint64](1)}})),
		families: volumeFamilies,
		want: `
# HELP kubelet_volume_stats_inodes_used [ALPHA] Number of used inodes in the volume
# TYPE kubelet_volume_stats_inodes_used gauge
kubelet_volume_stats_inodes_used{namespace="testns",persistentvolumeclaim="testpvc"} 1
# HELP kubelet_volume_stats_used_bytes [ALPHA] Number of used bytes in the volume
# TYPE kubelet_volume_stats_used_bytes gauge
kubelet_volume_stats_used_bytes{namespace="testns",persistentvolumeclaim="testpvc"} 7
`,
	}, {
		name:     "upstream: no pods, no log metrics",
		src:      summaryOf(),
		families: []string{"kubelet_container_log_filesystem_used_bytes"},
	}, {
		name: "upstream: a container's logs; one without log usage is left out",
		src: summaryOf(statsapi.PodStats{PodRef: statsapi.PodReference{Namespace: "some-namespace", Name: "podName1", UID: "UID_some_id"},
			Containers: []statsapi.ContainerStats{
				{Name: "containerName1", Logs: &statsapi.FsStats{UsedBytes: ptr.To[uint64](18)}},
				{Name: "noLogs"},
				{Name: "noUsage", Logs: &statsapi.FsStats{InodesUsed: ptr.To[uint64](1)}},
			}}),
		families: []string{"kubelet_container_log_filesystem_used_bytes"},
		want: logMetadata +
			`kubelet_container_log_filesystem_used_bytes{container="containerName1",namespace="some-namespace",pod="podName1",uid="UID_some_id"} 18` + "\n",
	}, {
		name: "a failed read sends nothing",
		src: SummaryProviderFunc(func(context.Context) (*statsapi.Summary, error) {
			return nil, errors.New("runtime down")
		}),
		families: append([]string{"kubelet_container_log_filesystem_used_bytes"}, volumeFamilies...),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCollector(t, tc.src)
			require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(tc.want), tc.families...))
			// Every sample sent is of a described family, and a
			// registry accepts them (no duplicate series).
			reg := prometheus.NewPedanticRegistry()
			require.NoError(t, reg.Register(c))
			_, err := reg.Gather()
			require.NoError(t, err)
		})
	}
}

// The volumes a PodVolumes func reports reach the summary as the kubelet's
// VolumeStats, and the collector reads them there: a claim's volume with
// its filesystem figures and health, not counted as local ephemeral
// storage even if a host says so.
func TestCollectorFromProvider(t *testing.T) {
	h := newHost(t, true)
	h.rt.Update(func(s *statstest.State) { addPod(s, "web", 1, true) })
	p := h.provider(func(c *Config) {
		c.PodVolumes = func(string) []PodVolume {
			return []PodVolume{
				{Name: "scratch", UsedBytes: 2 * Mi, InodesUsed: 1, LocalEphemeral: true, Time: epoch},
				{Name: "data", UsedBytes: 3 * Mi, InodesUsed: 4, CapacityBytes: 10 * Mi, AvailableBytes: 6 * Mi, Inodes: 100, InodesFree: 96,
					PVCRef: &statsapi.PVCReference{Namespace: "default", Name: "db"}, Abnormal: ptr.To(true), LocalEphemeral: true, Time: epoch},
			}
		}
	})
	s, err := p.Get(context.Background())
	require.NoError(t, err)
	vols := s.Pods[0].VolumeStats
	require.Len(t, vols, 2)
	require.Nil(t, vols[0].PVCRef)
	require.Nil(t, vols[0].CapacityBytes, "not known: left out")
	require.Nil(t, vols[0].VolumeHealthStats)
	require.Equal(t, statsapi.VolumeStats{Name: "data", PVCRef: &statsapi.PVCReference{Namespace: "default", Name: "db"},
		VolumeHealthStats: &statsapi.VolumeHealthStats{Abnormal: true},
		FsStats: statsapi.FsStats{Time: epochTime, UsedBytes: ptr.To(uint64(3 * Mi)), InodesUsed: ptr.To[uint64](4),
			CapacityBytes: ptr.To(uint64(10 * Mi)), AvailableBytes: ptr.To(uint64(6 * Mi)), Inodes: ptr.To[uint64](100), InodesFree: ptr.To[uint64](96)}},
		vols[1])
	c0 := s.Pods[0].Containers[0]
	require.Equal(t, fsUsed(c0.Rootfs)+fsUsed(c0.Logs)+2*Mi, *s.Pods[0].EphemeralStorage.UsedBytes,
		"the container's layer and logs and the emptyDir, not the claim")

	require.NoError(t, testutil.CollectAndCompare(newTestCollector(t, p), strings.NewReader(`
# HELP kubelet_volume_stats_used_bytes [ALPHA] Number of used bytes in the volume
# TYPE kubelet_volume_stats_used_bytes gauge
kubelet_volume_stats_used_bytes{namespace="default",persistentvolumeclaim="db"} 3.145728e+06
# HELP kubelet_volume_stats_health_status_abnormal [ALPHA] Abnormal volume health status. The count is either 1 or 0. 1 indicates the volume is unhealthy, 0 indicates volume is healthy
# TYPE kubelet_volume_stats_health_status_abnormal gauge
kubelet_volume_stats_health_status_abnormal{namespace="default",persistentvolumeclaim="db"} 1
`), "kubelet_volume_stats_used_bytes", "kubelet_volume_stats_health_status_abnormal"))
}

func TestNewCollector(t *testing.T) {
	_, err := NewCollector(CollectorConfig{Context: context.Background()})
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = NewCollector(CollectorConfig{Summary: summaryOf()})
	require.ErrorIs(t, err, ErrInvalidConfig)
}
