package podsyncer

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// resolveRecursiveReadOnly is the kubelet's rule for a volumeMount's
// recursiveReadOnly: Disabled or unset is plain; anything else needs a
// read-only mount without propagation; IfPossible is recursive where the
// runtime handler supports it, Enabled is an error where it does not.
func resolveRecursiveReadOnly(m v1.VolumeMount, supported bool) (bool, error) {
	if m.RecursiveReadOnly == nil || *m.RecursiveReadOnly == v1.RecursiveReadOnlyDisabled {
		return false, nil
	}
	if !m.ReadOnly {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not read-only", m.Name)
	}
	if m.MountPropagation != nil && *m.MountPropagation != v1.MountPropagationNone {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not compatible with propagation %q",
			m.Name, *m.MountPropagation)
	}
	switch mode := *m.RecursiveReadOnly; mode {
	case v1.RecursiveReadOnlyIfPossible:
		return supported, nil
	case v1.RecursiveReadOnlyEnabled:
		if !supported {
			return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not supported by the runtime", m.Name)
		}
		return true, nil
	default:
		return false, fmt.Errorf("unknown recursive read-only mode %q", mode)
	}
}

// applyRecursiveReadOnly marks the mounts of c's volumeMounts (mounts[i]
// is c.VolumeMounts[i], as Volumes.ContainerMounts returns them) recursive
// read-only where the kubelet's rule says so.
func applyRecursiveReadOnly(c *v1.Container, mounts []*runtimeapi.Mount, supported bool) error {
	if len(mounts) != len(c.VolumeMounts) {
		return fmt.Errorf("container %q: %d mounts for %d volumeMounts", c.Name, len(mounts), len(c.VolumeMounts))
	}
	for i := range c.VolumeMounts {
		rro, err := resolveRecursiveReadOnly(c.VolumeMounts[i], supported)
		if err != nil {
			return fmt.Errorf("failed to resolve recursive read-only mode: %w", err)
		}
		mounts[i].RecursiveReadOnly = rro
	}
	return nil
}

// volumeMountStatuses are c's volumeMounts as its status reports them:
// name, path, readOnly and, for a read-only mount, whether it is
// recursively read-only (Enabled or Disabled), as the kubelet writes them.
func volumeMountStatuses(c *v1.Container, supported bool) []v1.VolumeMountStatus {
	if len(c.VolumeMounts) == 0 {
		return nil
	}
	out := make([]v1.VolumeMountStatus, 0, len(c.VolumeMounts))
	for _, vm := range c.VolumeMounts {
		st := v1.VolumeMountStatus{Name: vm.Name, MountPath: vm.MountPath, ReadOnly: vm.ReadOnly}
		if vm.ReadOnly {
			mode := v1.RecursiveReadOnlyDisabled
			if rro, err := resolveRecursiveReadOnly(vm, supported); err == nil && rro {
				mode = v1.RecursiveReadOnlyEnabled
			}
			st.RecursiveReadOnly = &mode
		}
		out = append(out, st)
	}
	return out
}

// sandboxHandler is the CRI runtime handler of pod's sandbox sb: the one
// the runtime reports, else the pod's RuntimeClass resolved, else the
// default ("").
func (s *Syncer) sandboxHandler(ctx context.Context, pod *v1.Pod, sb *runtimeapi.PodSandbox) (string, error) {
	if sb != nil && sb.RuntimeHandler != "" {
		return sb.RuntimeHandler, nil
	}
	return s.podHandler(ctx, pod)
}

// podHandler resolves the pod's RuntimeClass to its CRI handler; "" for a
// pod without one.
func (s *Syncer) podHandler(ctx context.Context, pod *v1.Pod) (string, error) {
	if pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName == "" {
		return "", nil
	}
	if s.runtimeHandler == nil {
		return "", fmt.Errorf("runtime class %q: no RuntimeClass lookup on this agent", *pod.Spec.RuntimeClassName)
	}
	return s.runtimeHandler(ctx, *pod.Spec.RuntimeClassName)
}

// recursiveReadOnly says whether the named runtime handler makes read-only
// mounts recursive.
func (s *Syncer) recursiveReadOnly(handler string) bool {
	return s.rroSupported != nil && s.rroSupported(handler)
}

// userNamespace is the user namespace of pod's sandbox and containers on
// the named runtime handler: nil (the host's) unless the pod asks for
// hostUsers: false, which needs Config.UserNamespaces — without it the
// pod fails loudly rather than run in the host's namespace.
func (s *Syncer) userNamespace(ctx context.Context, pod *v1.Pod, handler string) (*runtimeapi.UserNamespace, error) {
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		return nil, nil
	}
	if s.userns == nil {
		return nil, errors.New("hostUsers: false (user namespaces) is not supported by this node agent")
	}
	return s.userns.PodUserNamespace(ctx, pod, handler, s.usernsSupported != nil && s.usernsSupported(handler))
}
