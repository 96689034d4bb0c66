package csi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/types"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/clockctx"
)

// TearDown unpublishes the volume whose directory is dir through its
// driver, from its vol_data.json alone (so it works after a restart),
// removes the directory, and unstages the volume once no other pod on the
// node uses it. A driver not registered (yet, or any more) is an error:
// the volume stays, and the pod's teardown is retried.
func (p *Plugin) TearDown(ctx context.Context, dir string) error {
	if err := p.checkVolumeDir(dir); err != nil {
		return err
	}
	data, err := loadVolData(dir)
	if errors.Is(err, os.ErrNotExist) {
		// Never published, or torn down but for the directory.
		return p.removeVolumeDir(dir)
	}
	if err != nil {
		return err
	}
	driver, handle := data[keyDriverName], data[keyVolumeHandle]
	node, err := p.cfg.Drivers.node(driver)
	if err != nil {
		return fmt.Errorf("UnmountVolume.TearDown failed for volume %s: %w", handle, err)
	}
	target := filepath.Join(dir, "mount")
	callCtx, cancel := clockctx.WithTimeout(ctx, p.cfg.Clock, p.cfg.Timeout)
	_, err = node.NodeUnpublishVolume(callCtx, &csipb.NodeUnpublishVolumeRequest{VolumeId: handle, TargetPath: target})
	err = p.timedOut(callCtx, err)
	cancel()
	if err != nil {
		return fmt.Errorf("UnmountVolume.TearDown failed for volume %s: rpc NodeUnpublishVolume: %w", handle, err)
	}
	if err := p.removeVolumeDir(dir); err != nil {
		return err
	}
	p.mu.Lock()
	delete(p.published, dir)
	p.mu.Unlock()
	klog.FromContext(ctx).V(3).Info("CSI volume unpublished", "dir", dir, "driver", driver, "handle", handle)
	if storagev1.VolumeLifecycleMode(data[keyLifecycle]) == storagev1.VolumeLifecycleEphemeral {
		return nil
	}
	return p.unstageIfUnused(ctx, driver, handle)
}

// removeVolumeDir removes a volume's directory once nothing is mounted
// there.
func (p *Plugin) removeVolumeDir(dir string) error {
	target := filepath.Join(dir, "mount")
	if err := p.isMountPoint(target); err != nil {
		return err
	}
	for _, path := range []string{target, filepath.Join(dir, volDataFile), dir} {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", path, err)
		}
	}
	return nil
}

// unstageIfUnused unstages a persistent volume no pod directory on the
// node refers to any more.
func (p *Plugin) unstageIfUnused(ctx context.Context, driver, handle string) error {
	staging, err := p.stagingPath(driver, handle)
	if err != nil {
		return fmt.Errorf("UnmountDevice failed for volume %s: %w", handle, err)
	}
	dataDir := filepath.Dir(staging)
	unlock := p.lock(staging)
	defer unlock()
	if _, err := loadVolData(dataDir); errors.Is(err, os.ErrNotExist) {
		return nil // never staged (the driver does not stage)
	}
	users, err := p.podVolumes(func(d map[string]string) bool {
		return d[keyDriverName] == driver && d[keyVolumeHandle] == handle
	})
	if err != nil || len(users) > 0 {
		return err
	}
	node, err := p.cfg.Drivers.node(driver)
	if err != nil {
		return fmt.Errorf("UnmountDevice failed for volume %s: %w", handle, err)
	}
	callCtx, cancel := clockctx.WithTimeout(ctx, p.cfg.Clock, p.cfg.Timeout)
	_, err = node.NodeUnstageVolume(callCtx, &csipb.NodeUnstageVolumeRequest{VolumeId: handle, StagingTargetPath: staging})
	err = p.timedOut(callCtx, err)
	cancel()
	if err != nil {
		return fmt.Errorf("UnmountDevice failed for volume %s: rpc NodeUnstageVolume: %w", handle, err)
	}
	if err := p.isMountPoint(staging); err != nil {
		return err
	}
	for _, path := range []string{staging, filepath.Join(dataDir, volDataFile), dataDir} {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", path, err)
		}
	}
	p.mu.Lock()
	delete(p.staged, staging)
	delete(p.locks, staging)
	p.mu.Unlock()
	klog.FromContext(ctx).V(3).Info("CSI volume unstaged", "driver", driver, "handle", handle)
	return nil
}

// podVolumes returns the vol_data.json of every CSI volume in a pod
// directory on the node that match.
func (p *Plugin) podVolumes(match func(map[string]string) bool) ([]map[string]string, error) {
	dirs, err := filepath.Glob(filepath.Join(p.cfg.RootDir, "pods", "*", "volumes", PluginName, "*"))
	if err != nil {
		return nil, err
	}
	var out []map[string]string
	for _, d := range dirs {
		data, err := loadVolData(d)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrInvalidVolData) {
			continue // no volume, or none of a valid driver's
		}
		if err != nil {
			return nil, err
		}
		if match(data) {
			out = append(out, data)
		}
	}
	return out, nil
}

// CleanupStaged unstages the persistent volumes staged on the node that
// no pod uses any more: what an agent stopped between staging a volume and
// publishing it, or between unpublishing and unstaging, left behind. Call
// it in housekeeping, after the orphaned pods' volumes are torn down. A
// volume whose driver is not registered is left for a later call.
func (p *Plugin) CleanupStaged(ctx context.Context) error {
	dirs, err := filepath.Glob(filepath.Join(p.cfg.RootDir, "plugins", "kubernetes.io", "csi", "*", "*"))
	if err != nil {
		return err
	}
	var errs []error
	registered := p.cfg.Drivers.Names()
	for _, d := range dirs {
		data, err := loadVolData(d)
		if err != nil {
			continue // not a staged volume's directory
		}
		if !slices.Contains(registered, data[keyDriverName]) {
			continue
		}
		p.mu.Lock()
		busy := p.settingUp[uniqueName(data[keyDriverName], data[keyVolumeHandle])] > 0
		p.mu.Unlock()
		if busy {
			continue
		}
		errs = append(errs, p.unstageIfUnused(ctx, data[keyDriverName], data[keyVolumeHandle]))
	}
	return errors.Join(errs...)
}

// InUse lists the persistent CSI volumes the node's pods use or are
// setting up, by their unique names: the node status's volumesInUse,
// which keeps the attach/detach controller from detaching them.
func (p *Plugin) InUse() []v1.UniqueVolumeName {
	seen := map[v1.UniqueVolumeName]bool{}
	p.mu.Lock()
	for u := range p.settingUp {
		seen[v1.UniqueVolumeName(u)] = true
	}
	p.mu.Unlock()
	users, _ := p.podVolumes(func(d map[string]string) bool {
		return storagev1.VolumeLifecycleMode(d[keyLifecycle]) != storagev1.VolumeLifecycleEphemeral
	})
	for _, d := range users {
		seen[v1.UniqueVolumeName(uniqueName(d[keyDriverName], d[keyVolumeHandle]))] = true
	}
	out := make([]v1.UniqueVolumeName, 0, len(seen))
	for u := range seen {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// CleanupOrphans is CleanupStaged as a housekeeping orphan cleaner
// (podhandler.OrphanCleaner): placed after the pods' volumes, it unstages
// what no pod uses any more.
func (p *Plugin) CleanupOrphans(ctx context.Context, _ func(types.UID) bool) error {
	return p.CleanupStaged(ctx)
}
