package volumes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// pvcProtectionFinalizer keeps a claim in use from being deleted; a claim
// being deleted without it must not be mounted.
const pvcProtectionFinalizer = "kubernetes.io/pvc-protection"

// pvcPlugin: a persistentVolumeClaim (or a generic ephemeral volume's
// claim), read as the node identity and resolved to its bound
// PersistentVolume, whose required node affinity must select the node
// (whatever its source). hostPath and local PersistentVolumes are the
// node's own paths and are mounted from there; other sources, and
// volumeMode Block, are refused by name unless a PersistentPlugin mounts
// them.
type pvcPlugin struct{ m *Manager }

func (pvcPlugin) Name() string { return "" } // nothing kept in the pod's directory
func (pvcPlugin) CanSupport(v *v1.Volume) bool {
	return v.PersistentVolumeClaim != nil || v.Ephemeral != nil
}

func (p pvcPlugin) SetUp(ctx context.Context, v Volume) (Mount, error) {
	if mnt, ok := p.m.mountOf(v.Pod.UID, v.Spec.Name); ok {
		return mnt, nil // resolved once: a claim's binding does not change under a pod
	}
	claim, readOnly := v.Pod.Name+"-"+v.Spec.Name, false
	if src := v.Spec.PersistentVolumeClaim; src != nil {
		claim, readOnly = src.ClaimName, src.ReadOnly
	}
	pv, err := p.m.boundVolume(ctx, v.Pod, claim, v.Spec.Ephemeral != nil)
	if err != nil {
		return Mount{}, fmt.Errorf("error processing PVC %s/%s: %w", v.Pod.Namespace, claim, err)
	}
	p.m.setPluginName(v.Pod.UID, v.Spec.Name, pvPluginName(pv, p.m.persistentPluginFor(pv)))
	if err := checkVolumeMode(v.Pod, v.Spec.Name, pv); err != nil {
		return Mount{}, err
	}
	if err := p.m.checkNodeAffinity(pv); err != nil {
		return Mount{}, err
	}
	if err := p.m.checkReadWriteOncePod(pv, v.Pod.UID); err != nil {
		return Mount{}, err
	}
	mnt, err := p.mount(ctx, v, pv, readOnly)
	if err == nil {
		p.m.mountedPV(pv, v.Pod.UID)
		p.m.mountedClaim(v.Pod, v.Spec.Name, claim, pv, mnt)
	}
	return mnt, err
}

// mount mounts the PersistentVolume pv bound to the claim of volume v.
func (p pvcPlugin) mount(ctx context.Context, v Volume, pv *v1.PersistentVolume, readOnly bool) (Mount, error) {
	if pp := p.m.persistentPluginFor(pv); pp != nil {
		return pp.SetUp(ctx, Volume{Pod: v.Pod, Spec: v.Spec, Dir: p.m.volumeDir(v.Pod, pp, v.Spec), PV: pv})
	}
	mnt := Mount{ReadOnly: readOnly}
	switch {
	case pv.Spec.HostPath != nil:
		mnt.HostPath = pv.Spec.HostPath.Path
		return mnt, checkHostPath(pv.Spec.HostPath)
	case pv.Spec.Local != nil:
		mnt.HostPath = pv.Spec.Local.Path
		info, err := os.Stat(mnt.HostPath)
		if err != nil {
			return Mount{}, fmt.Errorf("local PersistentVolume %s: %w", pv.Name, err)
		}
		if !info.IsDir() {
			return Mount{}, fmt.Errorf("local PersistentVolume %s: %s is not a directory (block devices are not supported by this node agent)", pv.Name, mnt.HostPath)
		}
		if !readOnly {
			if err := SetOwnership(v.Pod, mnt.HostPath, false); err != nil {
				return Mount{}, fmt.Errorf("local PersistentVolume %s: fsGroup: %w", pv.Name, err)
			}
		}
		p.m.markInUse(v.Pod.UID, v1.UniqueVolumeName("kubernetes.io/local-volume/"+pv.Name))
		return mnt, nil
	}
	return Mount{}, fmt.Errorf("PersistentVolume %s: volume type %s is not supported by this node agent", pv.Name, pvType(pv))
}

// boundVolume reads the claim and the PersistentVolume bound to it, with
// the kubelet's checks and messages.
func (m *Manager) boundVolume(ctx context.Context, pod *v1.Pod, claim string, ephemeral bool) (*v1.PersistentVolume, error) {
	if m.cfg.Client == nil {
		return nil, errors.New("no API client to read the claim (standalone node)")
	}
	pvc, err := m.cfg.Client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to fetch PVC from API server: %w", err)
	}
	if pvc.DeletionTimestamp != nil && !slices.Contains(pvc.Finalizers, pvcProtectionFinalizer) {
		return nil, errors.New("PVC is being deleted")
	}
	if ephemeral && !metav1.IsControlledBy(pvc, pod) {
		return nil, fmt.Errorf("PVC %s/%s was not created for pod %s/%s (pod is not owner)", pvc.Namespace, pvc.Name, pod.Namespace, pod.Name)
	}
	if pvc.Status.Phase != v1.ClaimBound {
		return nil, errors.New("PVC is not bound")
	}
	if pvc.Spec.VolumeName == "" {
		return nil, errors.New("PVC has empty pvc.Spec.VolumeName")
	}
	pv, err := m.cfg.Client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to fetch PV %s from API server: %w", pvc.Spec.VolumeName, err)
	}
	if pv.Spec.ClaimRef == nil {
		return nil, fmt.Errorf("found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", pv.Name)
	}
	if pv.Spec.ClaimRef.UID != pvc.UID {
		return nil, fmt.Errorf("found PV object %s but its pv.Spec.ClaimRef.UID %s does not point to claim.UID %s", pv.Name, pv.Spec.ClaimRef.UID, pvc.UID)
	}
	return pv, nil
}

// readWriteOncePod reports whether pv may be used by one pod only: its
// only access mode is ReadWriteOncePod (with several, the pod's intent is
// unknown, and upstream does not enforce it either).
func readWriteOncePod(pv *v1.PersistentVolume) bool {
	return len(pv.Spec.AccessModes) == 1 && pv.Spec.AccessModes[0] == v1.ReadWriteOncePod
}

// checkReadWriteOncePod refuses a ReadWriteOncePod volume another pod on
// the node has mounted (the scheduler enforces it too, but a pod may be
// bound to the node directly).
func (m *Manager) checkReadWriteOncePod(pv *v1.PersistentVolume, uid types.UID) error {
	if !readWriteOncePod(pv) {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if owner, ok := m.rwop[pv.Name]; ok && owner != uid {
		return errors.New("volume uses the ReadWriteOncePod access mode and is already in use by another pod")
	}
	return nil
}

// mountedPV records that the pod mounted pv (a ReadWriteOncePod volume is
// the pod's until its teardown).
func (m *Manager) mountedPV(pv *v1.PersistentVolume, uid types.UID) {
	if !readWriteOncePod(pv) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rwop[pv.Name] = uid
}

// checkVolumeMode refuses a Block volume (raw devices are not supported)
// and a mismatch between the volume's mode and how containers use it.
func checkVolumeMode(pod *v1.Pod, name string, pv *v1.PersistentVolume) error {
	block := pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == v1.PersistentVolumeBlock
	mounts, devices := volumeUses(pod)
	switch {
	case block && mounts[name]:
		return fmt.Errorf("volume %s has volumeMode Block, but is specified in volumeMounts", name)
	case !block && devices[name]:
		return fmt.Errorf("volume %s has volumeMode Filesystem, but is specified in volumeDevices", name)
	case block:
		return fmt.Errorf("volume %s: volumeMode Block (raw block devices) is not supported by this node agent", name)
	}
	return nil
}

// mountOf is how containers mount a volume set up before.
func (m *Manager) mountOf(uid types.UID, name string) (Mount, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mnt, ok := m.mounts[uid][name]
	return mnt, ok
}

// pvType names a PersistentVolume's source, for error messages.
func pvType(pv *v1.PersistentVolume) string {
	s := pv.Spec.PersistentVolumeSource
	switch {
	case s.CSI != nil:
		return "csi (driver " + s.CSI.Driver + ")"
	case s.NFS != nil:
		return "nfs"
	case s.ISCSI != nil:
		return "iscsi"
	case s.FC != nil:
		return "fc"
	case s.RBD != nil:
		return "rbd"
	case s.CephFS != nil:
		return "cephfs"
	case s.Glusterfs != nil:
		return "glusterfs"
	}
	return "unknown"
}
