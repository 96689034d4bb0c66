package volumes

import (
	"context"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Plugin provides one type of volume. The built-in plugins cover emptyDir,
// hostPath, configMap, secret, downwardAPI, projected and image volumes; a
// host adds its own (a persistent volume type, a provider's storage) in
// Config.Plugins, consulted before the built-in ones, without editing the
// Manager.
type Plugin interface {
	// Name is the plugin's directory under a pod's volumes directory, as
	// the kubelet escapes it on disk ("kubernetes.io~empty-dir"); ""
	// when the plugin keeps nothing there (hostPath).
	Name() string
	// CanSupport reports whether v is of the plugin's type.
	CanSupport(v *v1.Volume) bool
	// SetUp makes the volume ready and returns how containers mount it.
	// It runs on every sync of a pod that runs something, so it must be
	// cheap and change nothing when nothing changed (that is how
	// contents follow their sources). An error is a FailedMount.
	SetUp(ctx context.Context, v Volume) (Mount, error)
}

// MountOwner is implemented by a Plugin that mounts filesystems (a tmpfs)
// in its volumes' directories: TearDownPod unmounts them. A mount found
// under another plugin's directory is taken as foreign and the pod
// directory is left in place.
type MountOwner interface {
	OwnsMounts() bool
}

// PersistentPlugin is implemented by a Plugin that also mounts
// PersistentVolumes of its type (a CSI driver's): the Manager resolves a
// pod's claim to its bound PersistentVolume, with the kubelet's checks, and
// hands it to the first plugin that supports it, with Volume.PV set.
type PersistentPlugin interface {
	CanSupportPersistent(pv *v1.PersistentVolume) bool
}

// TearDowner is implemented by a Plugin whose volumes need more than
// unmounting and removal when their pod is gone (a CSI volume is
// unpublished through its driver). TearDownPod calls TearDown for each
// directory under the plugin's directory of the pod, before anything
// else; an error leaves the pod directory for a later attempt. It must
// work from what is on disk alone (an agent restarted since the setup),
// and succeed again for a volume already torn down.
type TearDowner interface {
	TearDown(ctx context.Context, dir string) error
}

// InUseReporter is implemented by a Plugin whose volumes are attachable
// or device-mounted (a CSI driver's): Manager.InUse adds what it lists.
type InUseReporter interface {
	InUse() []v1.UniqueVolumeName
}

// Volume is one volume of a pod, as a Plugin sets it up.
type Volume struct {
	Pod  *v1.Pod
	Spec *v1.Volume
	// Dir is <root>/pods/<uid>/volumes/<plugin name>/<volume name>, where
	// the plugin keeps what it owns; it is not created for the plugin.
	Dir string
	// PV is the PersistentVolume bound to the volume's claim, for a
	// PersistentPlugin; nil for an inline volume.
	PV *v1.PersistentVolume
}

// Mount is how containers mount a volume.
type Mount struct {
	// HostPath is bind-mounted into containers (a subPath is resolved
	// inside it).
	HostPath string
	// ReadOnly makes every mount of the volume read-only, whatever the
	// volumeMount says (configMap, secret, downwardAPI, projected).
	ReadOnly bool
	// Image, if set, is mounted by the runtime from an image instead of
	// HostPath (always read-only).
	Image *runtimeapi.ImageSpec
}

// builtins are the Manager's own plugins, after Config.Plugins.
func (m *Manager) builtins() []Plugin {
	return []Plugin{emptyDirPlugin{m}, hostPathPlugin{}, configMapPlugin{m}, secretPlugin{m},
		downwardAPIPlugin{m}, projectedPlugin{m}, imagePlugin{m}, pvcPlugin{m}}
}

// pluginFor is the first plugin that supports v: the host's, then the
// built-in ones; nil if none does.
func (m *Manager) pluginFor(v *v1.Volume) Plugin {
	for _, p := range m.plugins {
		if p.CanSupport(v) {
			return p
		}
	}
	return nil
}

// persistentPluginFor is the first plugin that mounts pv; nil if none.
func (m *Manager) persistentPluginFor(pv *v1.PersistentVolume) Plugin {
	for _, p := range m.plugins {
		if pp, ok := p.(PersistentPlugin); ok && pp.CanSupportPersistent(pv) {
			return p
		}
	}
	return nil
}

// volumeDir is where plugin p keeps volume v of the pod.
func (m *Manager) volumeDir(pod *v1.Pod, p Plugin, v *v1.Volume) string {
	return m.volumeDirOf(pod.UID, p, v)
}

func (m *Manager) volumeDirOf(uid types.UID, p Plugin, v *v1.Volume) string {
	return filepath.Join(m.PodDir(uid), "volumes", p.Name(), v.Name)
}

// ownsMounts reports whether the plugin named dir mounts filesystems in
// its volume directories.
func (m *Manager) ownsMounts(dir string) bool {
	for _, p := range m.plugins {
		if o, ok := p.(MountOwner); ok && p.Name() == dir && o.OwnsMounts() {
			return true
		}
	}
	return false
}
