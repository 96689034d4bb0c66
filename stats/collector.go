package stats

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// SummaryProvider returns the node's stats summary. Provider is one; its
// method set is eviction.SummaryProvider's and kubeletapi.SummaryProvider's,
// so one value feeds all three.
type SummaryProvider interface {
	Get(ctx context.Context) (*statsapi.Summary, error)
}

// SummaryProviderFunc adapts a function to SummaryProvider.
type SummaryProviderFunc func(ctx context.Context) (*statsapi.Summary, error)

// Get calls f.
func (f SummaryProviderFunc) Get(ctx context.Context) (*statsapi.Summary, error) { return f(ctx) }

// CollectorConfig configures a Collector.
type CollectorConfig struct {
	// Summary is read once per scrape. Required. It is called from the
	// scraping goroutine, possibly concurrently, and must not keep the
	// summary it returns.
	Summary SummaryProvider
	// Context is passed to every Summary.Get (a scrape has none of its
	// own): it carries the logger scrape failures go to, and once it is
	// cancelled a provider that honours it returns at once. Required.
	Context context.Context
}

// Collector is a prometheus.Collector of the kubelet's volume stats and log
// metrics collectors (pkg/kubelet/metrics/collectors, volume_stats.go and
// log_metrics.go): the families, help (with the "[ALPHA] " component-base
// writes), labels and rules of a v1.36 kubelet, from one summary per
// scrape. Register it on the registry the host serves at /metrics.
type Collector struct {
	cfg CollectorConfig
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector checks cfg and returns a Collector. It reads nothing until
// it is collected.
func NewCollector(cfg CollectorConfig) (*Collector, error) {
	switch {
	case cfg.Summary == nil:
		return nil, fmt.Errorf("%w: CollectorConfig.Summary is required", ErrInvalidConfig)
	case cfg.Context == nil:
		return nil, fmt.Errorf("%w: CollectorConfig.Context is required", ErrInvalidConfig)
	}
	return &Collector{cfg: cfg}, nil
}

func alphaDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, "[ALPHA] "+help, labels, nil)
}

var (
	pvcLabels = []string{"namespace", "persistentvolumeclaim"}

	descVolumeCapacity = alphaDesc("kubelet_volume_stats_capacity_bytes",
		"Capacity in bytes of the volume", pvcLabels...)
	descVolumeAvailable = alphaDesc("kubelet_volume_stats_available_bytes",
		"Number of available bytes in the volume", pvcLabels...)
	descVolumeUsed = alphaDesc("kubelet_volume_stats_used_bytes",
		"Number of used bytes in the volume", pvcLabels...)
	descVolumeInodes = alphaDesc("kubelet_volume_stats_inodes",
		"Maximum number of inodes in the volume", pvcLabels...)
	descVolumeInodesFree = alphaDesc("kubelet_volume_stats_inodes_free",
		"Number of free inodes in the volume", pvcLabels...)
	descVolumeInodesUsed = alphaDesc("kubelet_volume_stats_inodes_used",
		"Number of used inodes in the volume", pvcLabels...)
	descVolumeAbnormal = alphaDesc("kubelet_volume_stats_health_status_abnormal",
		"Abnormal volume health status. The count is either 1 or 0. 1 indicates the volume is unhealthy, 0 indicates volume is healthy",
		pvcLabels...)
	descLogSize = alphaDesc("kubelet_container_log_filesystem_used_bytes",
		"Bytes used by the container's logs on the filesystem.", "uid", "namespace", "pod", "container")
)

// Describe sends the descriptors of the eight families.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descVolumeCapacity, descVolumeAvailable, descVolumeUsed,
		descVolumeInodes, descVolumeInodesFree, descVolumeInodesUsed, descVolumeAbnormal, descLogSize} {
		ch <- d
	}
}

// Collect reads the summary once, in the caller's goroutine, and sends:
//
//   - for each claim (namespace and name) of a pod's volume, once however
//     many pods mount it (the first one's figures), its
//     kubelet_volume_stats_* gauges, health_status_abnormal only when the
//     volume's health is known; volumes without a claim are left out;
//   - for each container whose log usage is known,
//     kubelet_container_log_filesystem_used_bytes.
//
// A failed read is logged and sends nothing. Like the kubelet's, Collect
// waits for the summary with no deadline of its own (it is not given a
// context): it is as slow as Summary.Get, and the host bounds that (the
// Provider's slow parts are the runtime's CRI calls, under
// CollectorConfig.Context, and volumes.Manager.Usage's, which bounds its
// statfs calls).
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx := c.cfg.Context
	sum, err := c.cfg.Summary.Get(ctx)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Failed to get pod stats")
		return
	}
	if sum == nil {
		return
	}
	seen := map[statsapi.PVCReference]bool{}
	for i := range sum.Pods {
		p := &sum.Pods[i]
		for j := range p.VolumeStats {
			v := &p.VolumeStats[j]
			if v.PVCRef == nil || seen[*v.PVCRef] {
				continue
			}
			seen[*v.PVCRef] = true
			collectVolume(ch, v)
		}
		for j := range p.Containers {
			ctr := &p.Containers[j]
			if ctr.Logs != nil && ctr.Logs.UsedBytes != nil {
				ch <- prometheus.MustNewConstMetric(descLogSize, prometheus.GaugeValue, float64(*ctr.Logs.UsedBytes),
					p.PodRef.UID, p.PodRef.Namespace, p.PodRef.Name, ctr.Name)
			}
		}
	}
}

// collectVolume sends the gauges of a claim's volume; a figure the summary
// lacks is left out (the kubelet's summary always has all six).
func collectVolume(ch chan<- prometheus.Metric, v *statsapi.VolumeStats) {
	labels := []string{v.PVCRef.Namespace, v.PVCRef.Name}
	for _, g := range []struct {
		desc  *prometheus.Desc
		value *uint64
	}{
		{descVolumeCapacity, v.CapacityBytes}, {descVolumeAvailable, v.AvailableBytes}, {descVolumeUsed, v.UsedBytes},
		{descVolumeInodes, v.Inodes}, {descVolumeInodesFree, v.InodesFree}, {descVolumeInodesUsed, v.InodesUsed},
	} {
		if g.value != nil {
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(*g.value), labels...)
		}
	}
	if h := v.VolumeHealthStats; h != nil {
		abnormal := 0.0
		if h.Abnormal {
			abnormal = 1
		}
		ch <- prometheus.MustNewConstMetric(descVolumeAbnormal, prometheus.GaugeValue, abnormal, labels...)
	}
}
