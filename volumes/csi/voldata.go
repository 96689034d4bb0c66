package csi

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// The keys of vol_data.json, the file the kubelet keeps next to each
// published volume (and staged one) so it can tear the volume down after
// a restart; the same names, so a node moved between agents tears down
// what the other left.
const (
	keySpecVolID    = "specVolID"
	keyVolumeHandle = "volumeHandle"
	keyDriverName   = "driverName"
	keyNodeName     = "nodeName"
	keyAttachmentID = "attachmentID"
	keyLifecycle    = "volumeLifecycleMode"
	volDataFile     = "vol_data.json"
)

func saveVolData(dir string, data map[string]string) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+volDataFile)
	if err := os.WriteFile(tmp, b, 0o640); err != nil {
		return fmt.Errorf("save volume data: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, volDataFile))
}

// loadVolData reads dir/vol_data.json; os.ErrNotExist if there is none,
// ErrInvalidVolData if it does not name a valid driver and a volume
// handle. The file is on the node's disk, not necessarily written by this
// agent: what it names is checked before any path is built from it.
func loadVolData(dir string) (map[string]string, error) {
	path := filepath.Join(dir, volDataFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	data := map[string]string{}
	if err := json.Unmarshal(b, &data); err != nil {
		return nil, fmt.Errorf("volume data %s: %w", path, err)
	}
	if err := checkDriverName(data[keyDriverName]); err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrInvalidVolData, path, err)
	}
	if data[keyVolumeHandle] == "" {
		return nil, fmt.Errorf("%w %s: no volume handle", ErrInvalidVolData, path)
	}
	return data, nil
}

// attachmentName is the VolumeAttachment the attach/detach controller
// creates for a volume on a node: csi-<sha256(handle, driver, node)>.
func attachmentName(handle, driver, node string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+driver+node)))
}

// ephemeralHandle is the volume handle of an inline (ephemeral) CSI
// volume: csi-<sha256(pod UID, volume name)>.
func ephemeralHandle(podUID, volume string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(podUID+volume)))
}

// stagingPath is where a persistent volume is staged for all its pods:
// <root>/plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount.
// An invalid driver name, or a path not under the root directory, is an
// error.
func (p *Plugin) stagingPath(driver, handle string) (string, error) {
	if err := checkDriverName(driver); err != nil {
		return "", err
	}
	return underRoot(p.cfg.RootDir, "plugins", "kubernetes.io", "csi", driver,
		fmt.Sprintf("%x", sha256.Sum256([]byte(handle))), "globalmount")
}

// checkVolumeDir refuses a volume directory (given by the volumes.Manager
// or a host) that is not under the root directory.
func (p *Plugin) checkVolumeDir(dir string) error {
	if within(p.cfg.RootDir, dir) || within(p.rootAsGiven, dir) {
		return nil
	}
	return fmt.Errorf("%w: volume directory %q", ErrUnsafePath, dir)
}

// uniqueName is the volume's name in node status (volumesInUse,
// volumesAttached): kubernetes.io/csi/<driver>^<handle>.
func uniqueName(driver, handle string) string {
	return "kubernetes.io/csi/" + driver + "^" + handle
}
