package volumes

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// notAvailable is upstream's plugin name for a volume whose plugin is not
// known.
const notAvailable = "N/A"

// The operation names of storage_operation_duration_seconds this package
// records (upstream's).
const (
	opMount   = "volume_mount"
	opUnmount = "volume_unmount"
)

// metrics are the volume manager's optional collectors, named as the
// kubelet's (help with its stability level, as component-base writes
// it); a nil *metrics records nothing.
type metrics struct {
	operations   *prometheus.HistogramVec
	orphans      prometheus.Gauge
	orphanErrors prometheus.Gauge
}

var totalVolumesDesc = prometheus.NewDesc("volume_manager_total_volumes",
	"[ALPHA] Number of volumes in Volume Manager", []string{"plugin_name", "state"}, nil)

// newMetrics registers the collectors on reg, among them one that counts
// m's volumes when scraped; nil for a nil reg. A collector already
// registered there is an error.
func newMetrics(reg prometheus.Registerer, m *Manager) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	mt := &metrics{operations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "storage_operation_duration_seconds",
		Help:    "[ALPHA] Storage operation duration",
		Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600},
	}, []string{"volume_plugin", "operation_name", "status", "migrated"}),
		orphans: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "orphan_pod_cleaned_volumes",
			Help: "[ALPHA] The total number of orphaned Pods whose volumes were cleaned in the last periodic sweep."}),
		orphanErrors: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "orphan_pod_cleaned_volumes_errors",
			Help: "[ALPHA] The number of orphaned Pods whose volumes failed to be cleaned in the last periodic sweep."}),
	}
	for _, c := range []prometheus.Collector{mt.operations, mt.orphans, mt.orphanErrors, totalVolumes{m}} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("%w: register metrics: %w", ErrInvalidConfig, err)
		}
	}
	return mt, nil
}

// operation records one storage operation of plugin that took d.
func (mt *metrics) operation(plugin, op string, d time.Duration, err error) {
	if mt == nil {
		return
	}
	status := "success"
	if err != nil {
		status = "fail-unknown" // upstream's only failure status
	}
	mt.operations.WithLabelValues(plugin, op, status, strconv.FormatBool(false)).Observe(d.Seconds())
}

// swept records one CleanupOrphans sweep: the orphaned pod directories
// found, and those that could not be removed.
func (mt *metrics) swept(found, failed int) {
	if mt == nil {
		return
	}
	mt.orphans.Set(float64(found))
	mt.orphanErrors.Set(float64(failed))
}

// totalVolumes is volume_manager_total_volumes: the volumes of the pods
// set up and not torn down (desired_state_of_world) and those of them
// set up at least once (actual_state_of_world), by plugin, when scraped.
type totalVolumes struct{ m *Manager }

// Describe implements prometheus.Collector.
func (c totalVolumes) Describe(ch chan<- *prometheus.Desc) { ch <- totalVolumesDesc }

// Collect implements prometheus.Collector.
func (c totalVolumes) Collect(ch chan<- prometheus.Metric) {
	counts := map[[2]string]int{}
	c.m.mu.Lock()
	for _, vols := range c.m.pluginNames {
		for _, plugin := range vols {
			counts[[2]string{plugin, "desired_state_of_world"}]++
		}
	}
	for uid, mounts := range c.m.mounts {
		for name := range mounts {
			plugin, ok := c.m.pluginNames[uid][name]
			if !ok {
				plugin = notAvailable
			}
			counts[[2]string{plugin, "actual_state_of_world"}]++
		}
	}
	c.m.mu.Unlock()
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(totalVolumesDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}

// pluginMetricName is the kubelet's name of the plugin of volume v
// (kubernetes.io/configmap; kubernetes.io/csi:<driver> for a CSI
// volume), "" for a claim (named after its PersistentVolume once bound:
// pvPluginName).
func pluginMetricName(p Plugin, v *v1.Volume) string {
	switch p.(type) {
	case hostPathPlugin:
		return "kubernetes.io/host-path"
	case pvcPlugin:
		return ""
	}
	name := strings.ReplaceAll(p.Name(), "~", "/")
	switch {
	case name == "":
		return notAvailable
	case v.CSI != nil:
		return name + ":" + v.CSI.Driver
	}
	return name
}

// pvPluginName is the kubelet's name of the plugin that mounts pv: pp's
// (with the CSI driver), else the node's own path types.
func pvPluginName(pv *v1.PersistentVolume, pp Plugin) string {
	if pp != nil {
		name := strings.ReplaceAll(pp.Name(), "~", "/")
		if name == "" {
			return notAvailable
		}
		if pv.Spec.CSI != nil {
			name += ":" + pv.Spec.CSI.Driver
		}
		return name
	}
	switch {
	case pv.Spec.HostPath != nil:
		return "kubernetes.io/host-path"
	case pv.Spec.Local != nil:
		return "kubernetes.io/local-volume"
	}
	return notAvailable
}

// remounted reports whether the kubelet mounts p's volumes again on
// every sync of their pod (its plugins' RequiresRemount: their contents
// follow their sources); other volumes are mounted once.
func remounted(p Plugin) bool {
	switch p.(type) {
	case configMapPlugin, secretPlugin, downwardAPIPlugin, projectedPlugin:
		return true
	}
	return false
}

// setPluginName records the kubelet's plugin name of a pod's volume.
func (m *Manager) setPluginName(uid types.UID, volume, plugin string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pluginNames[uid] == nil {
		m.pluginNames[uid] = map[string]string{}
	}
	m.pluginNames[uid][volume] = plugin
}

// pluginName is the plugin name recorded for a pod's volume.
func (m *Manager) pluginName(uid types.UID, volume string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name, ok := m.pluginNames[uid][volume]
	return name, ok
}
