package eviction

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The kubelet's metric labels for evictions over a local storage limit
// (they are not threshold signals).
const (
	signalEmptyDirFsLimit           Signal = "emptydirfs.limit"
	signalEphemeralPodFsLimit       Signal = "ephemeralpodfs.limit"
	signalEphemeralContainerFsLimit Signal = "ephemeralcontainerfs.limit"
)

// localStorageGracePeriodSeconds is the grace period of a pod evicted for
// its local storage use, as upstream's immediate evictions.
const localStorageGracePeriodSeconds = 1

// localStorageViolation reports whether pod uses more local ephemeral
// storage than it may, in upstream's order: an emptyDir volume beyond its
// sizeLimit, the pod beyond its ephemeral-storage limit (the sum of its
// containers', or its pod-level one), a container beyond its own (its
// logs, plus its writable layer unless images and layers have their own
// filesystem). It returns the kubelet's message and metric label.
func localStorageViolation(pod *v1.Pod, ps *statsapi.PodStats, dedicatedImageFs bool) (string, Signal, bool) {
	used := map[string]uint64{}
	for _, v := range ps.VolumeStats {
		if v.UsedBytes != nil {
			used[v.Name] = *v.UsedBytes
		}
	}
	for _, vol := range pod.Spec.Volumes {
		ed := vol.EmptyDir
		if ed == nil || ed.SizeLimit == nil || ed.SizeLimit.Sign() != 1 {
			continue
		}
		if u, ok := used[vol.Name]; ok && bytesQuantity(u).Cmp(*ed.SizeLimit) > 0 {
			return fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", vol.Name, ed.SizeLimit.String()), signalEmptyDirFsLimit, true
		}
	}
	if limit, ok := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})[v1.ResourceEphemeralStorage]; ok {
		if es := ps.EphemeralStorage; es != nil && es.UsedBytes != nil && bytesQuantity(*es.UsedBytes).Cmp(limit) > 0 {
			return fmt.Sprintf("Pod ephemeral local storage usage exceeds the total limit of containers %s. ", limit.String()), signalEphemeralPodFsLimit, true
		}
	}
	limits := map[string]resource.Quantity{}
	for _, c := range pod.Spec.Containers {
		if l := c.Resources.Limits.StorageEphemeral(); l.Value() != 0 {
			limits[c.Name] = *l
		}
	}
	for _, cs := range ps.Containers {
		limit, ok := limits[cs.Name]
		if !ok {
			continue
		}
		u := fsUsedBytes(cs.Logs)
		if !dedicatedImageFs {
			u += fsUsedBytes(cs.Rootfs)
		}
		if limit.Cmp(*bytesQuantity(u)) < 0 {
			return fmt.Sprintf("Container %s exceeded its local ephemeral storage limit %q. ", cs.Name, limit.String()), signalEphemeralContainerFsLimit, true
		}
	}
	return "", "", false
}

func bytesQuantity(n uint64) *resource.Quantity {
	return resource.NewQuantity(int64(n), resource.BinarySI)
}

func fsUsedBytes(fs *statsapi.FsStats) uint64 {
	if fs == nil || fs.UsedBytes == nil {
		return 0
	}
	return *fs.UsedBytes
}

// evictForLocalStorage evicts the first non-critical pod over a local
// storage limit, at once and without a DisruptionTarget condition, as
// upstream. done reports whether a pod was evicted (the pass ends there).
func (m *Manager) evictForLocalStorage(ctx context.Context, res Result, pods []*v1.Pod, stats StatsFunc) (Result, bool, error) {
	logger := klog.FromContext(ctx)
	for _, pod := range pods {
		ps, ok := stats(pod)
		if !ok {
			continue
		}
		msg, signal, over := localStorageViolation(pod, ps, m.cfg.DedicatedImageFs)
		if !over {
			continue
		}
		if IsCriticalPod(pod) {
			logger.Error(nil, "Eviction manager: cannot evict a critical pod", "pod", klog.KObj(pod))
			continue
		}
		res.Evicted, res.GracePeriodSeconds, res.Message, res.Resource = pod, localStorageGracePeriodSeconds, msg, v1.ResourceEphemeralStorage
		if m.cfg.Recorder != nil {
			m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, Reason, "%s", msg)
		}
		m.metrics.evicted(signal)
		logger.Info("Eviction manager: evicting pod over its local storage limit", "pod", klog.KObj(pod), "podUID", pod.UID, "message", msg)
		err := m.cfg.KillPod(ctx, pod, localStorageGracePeriodSeconds, func(s *v1.PodStatus) {
			s.Phase, s.Reason, s.Message = v1.PodFailed, Reason, msg
		})
		if err != nil {
			return res, true, fmt.Errorf("eviction: kill pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		return res, true, nil
	}
	return res, false, nil
}
