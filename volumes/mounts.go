package volumes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit/nodekit/podenv"
)

// ContainerMounts returns the CRI mounts of c's volumeMounts, one each, in
// order, after SetUpPod succeeded. vars holds the container's resolved
// environment for subPathExpr. configMap, secret, downwardAPI and projected
// volumes are always read-only, as on the kubelet. A volumeMount's
// recursiveReadOnly is the caller's: it depends on the pod's runtime
// handler (podsyncer resolves it and sets Mount.RecursiveReadOnly).
func (m *Manager) ContainerMounts(ctx context.Context, pod *v1.Pod, c *v1.Container, vars map[string]string) ([]*runtimeapi.Mount, error) {
	// Both name directories of subPath binds (volume-subpaths/<volume>/<container>).
	if err := errors.Join(checkName("pod UID", string(pod.UID)), checkName("container", c.Name)); err != nil {
		return nil, err
	}
	out := make([]*runtimeapi.Mount, 0, len(c.VolumeMounts))
	for i, vm := range c.VolumeMounts {
		idx := slices.IndexFunc(pod.Spec.Volumes, func(v v1.Volume) bool { return v.Name == vm.Name })
		if idx < 0 {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", vm.Name, c.Name)
		}
		v := &pod.Spec.Volumes[idx]
		m.mu.Lock()
		mnt, ok := m.mounts[pod.UID][v.Name]
		m.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("volume %q of container %q is not set up", vm.Name, c.Name)
		}
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			var err error
			if sub, err = expandSubPath(vm.SubPathExpr, vars); err != nil {
				return nil, err
			}
		}
		if mnt.Image != nil {
			// The runtime mounts the image itself, always read-only.
			out = append(out, &runtimeapi.Mount{ContainerPath: vm.MountPath, Readonly: true, ImageSubPath: sub, Image: mnt.Image})
			continue
		}
		host := mnt.HostPath
		if sub != "" {
			var err error
			if host, err = m.subPathMount(ctx, pod, vm.Name, host, sub, c.Name, i); err != nil {
				return nil, err
			}
		}
		prop, err := propagation(vm.MountPropagation)
		if err != nil {
			return nil, err
		}
		out = append(out, &runtimeapi.Mount{
			ContainerPath: vm.MountPath,
			HostPath:      host,
			Readonly:      vm.ReadOnly || mnt.ReadOnly,
			Propagation:   prop,
		})
	}
	return out, nil
}

func propagation(p *v1.MountPropagationMode) (runtimeapi.MountPropagation, error) {
	if p == nil {
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	}
	switch *p {
	case v1.MountPropagationNone:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	case v1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, nil
	case v1.MountPropagationBidirectional:
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, nil
	}
	return 0, fmt.Errorf("invalid MountPropagation mode: %q", *p)
}

// expandSubPath expands $(VAR) references in a subPathExpr from env; a
// reference to a variable that is unset or empty is an error.
func expandSubPath(expr string, vars map[string]string) (string, error) {
	var missing []string
	out := podenv.Expand(expr, func(name string) (string, bool) {
		v, ok := vars[name]
		if !ok || v == "" {
			missing = append(missing, name)
		}
		return v, true
	})
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", fmt.Errorf("missing value for %s", strings.Join(slices.Compact(missing), ", "))
	}
	return out, nil
}
