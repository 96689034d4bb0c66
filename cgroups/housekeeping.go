package cgroups

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Cleanup is the pod cgroups' part of housekeeping, what the kubelet's
// cleanupOrphanedPodCgroups and QoS update do: it sizes the QoS tiers for
// the pods active returns, then destroys the pod cgroups whose pod keep
// refuses (their stragglers killed; a busy one is retried on the next
// call). It fits podhandler.OrphanCleaner.
type Cleanup struct {
	// Manager is the pod cgroup tree.
	Manager *Manager
	// Active lists the pods that may still hold resources.
	Active func() []*v1.Pod
}

// CleanupOrphans is one housekeeping pass over the pod cgroups.
func (c Cleanup) CleanupOrphans(ctx context.Context, keep func(types.UID) bool) error {
	if err := c.Manager.UpdateQoS(ctx, c.Active()); err != nil {
		klog.FromContext(ctx).Error(err, "Update QoS cgroups")
	}
	pods, err := c.Manager.Pods()
	if err != nil {
		return fmt.Errorf("list pod cgroups: %w", err)
	}
	for uid, cg := range pods {
		if keep(uid) {
			continue
		}
		if err := c.Manager.Destroy(ctx, cg); err != nil {
			klog.FromContext(ctx).V(2).Info("Pod cgroup not removed yet", "uid", uid, "err", err)
		}
	}
	return nil
}

// RuntimeConfigGetter is the CRI call RuntimeDriver makes.
type RuntimeConfigGetter interface {
	RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error)
}

// RuntimeDriver is the cgroup driver the runtime reports (CRI
// RuntimeConfig), which the kubelet takes over its configured one since
// v1.34: the two must agree, and the runtime's is the one in effect. An
// error means the runtime does not report one.
func RuntimeDriver(ctx context.Context, rt RuntimeConfigGetter) (string, error) {
	rc, err := rt.RuntimeConfig(ctx)
	if err != nil {
		return "", err
	}
	if rc.GetLinux() == nil {
		return "", fmt.Errorf("the runtime reports no Linux configuration")
	}
	if rc.GetLinux().GetCgroupDriver() == runtimeapi.CgroupDriver_SYSTEMD {
		return DriverSystemd, nil
	}
	return DriverCgroupfs, nil
}
