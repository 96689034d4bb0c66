package volumes

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// emptyDirPlugin: a directory of the pod (mode 0777, as the kubelet's),
// on a tmpfs for medium Memory.
type emptyDirPlugin struct{ m *Manager }

func (emptyDirPlugin) Name() string                 { return "kubernetes.io~empty-dir" }
func (emptyDirPlugin) CanSupport(v *v1.Volume) bool { return v.EmptyDir != nil }
func (emptyDirPlugin) OwnsMounts() bool             { return true }

func (p emptyDirPlugin) SetUp(_ context.Context, v Volume) (Mount, error) {
	return Mount{HostPath: v.Dir}, p.m.setUpEmptyDir(v.Pod, v.Spec.EmptyDir, v.Dir)
}
