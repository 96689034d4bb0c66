package userns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// mappings is the JSON of a pod's MappingsFile, field for field the
// kubelet's, so either can read what the other wrote.
type mappings struct {
	UIDMappings []idMapping `json:"uidMappings"`
	GIDMappings []idMapping `json:"gidMappings"`
}

// idMapping is one entry of mappings, in the kubelet's field order.
type idMapping struct {
	HostID      uint32 `json:"hostId"`
	ContainerID uint32 `json:"containerId"`
	Length      uint32 `json:"length"`
}

// podMappings are the mappings the manager writes: container IDs from 0
// mapped to the range starting at first, the same for users and groups.
func podMappings(first, length uint32) mappings {
	m := idMapping{HostID: first, ContainerID: 0, Length: length}
	return mappings{UIDMappings: []idMapping{m}, GIDMappings: []idMapping{m}}
}

// parseMappings decodes a MappingsFile and checks it holds what the
// kubelet (or this package) writes: one mapping, the same for users and
// groups, root mapped. The messages are the kubelet's.
func parseMappings(content []byte) (IDRange, error) {
	var m mappings
	if err := json.Unmarshal(content, &m); err != nil {
		return IDRange{}, &kubeletError{msg: "invalid user namespace mappings file: " + err.Error(), kind: ErrInvalidMappings}
	}
	if len(m.UIDMappings) != 1 {
		return IDRange{}, newError(ErrInvalidMappings, "invalid user namespace configuration: no more than one mapping allowed.")
	}
	if len(m.UIDMappings) != len(m.GIDMappings) {
		return IDRange{}, newError(ErrInvalidMappings, "invalid user namespace configuration: GID and UID mappings should be identical.")
	}
	if m.UIDMappings[0] != m.GIDMappings[0] {
		return IDRange{}, newError(ErrInvalidMappings, "invalid user namespace configuration: GID and UID mapping should be identical")
	}
	// Runtimes assume root is mapped; only accept what we produce.
	if m.UIDMappings[0].ContainerID != 0 {
		return IDRange{}, newError(ErrInvalidMappings, "invalid user namespace configuration: UID 0 must be mapped")
	}
	if m.GIDMappings[0].ContainerID != 0 {
		return IDRange{}, newError(ErrInvalidMappings, "invalid user namespace configuration: GID 0 must be mapped")
	}
	return IDRange{First: m.UIDMappings[0].HostID, Length: m.UIDMappings[0].Length}, nil
}

// checkUID refuses a UID that would not name a directory of its own
// under the pods directory.
func checkUID(uid types.UID) error {
	s := string(uid)
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, `/\`) {
		return fmt.Errorf("%w: %q", ErrInvalidUID, s)
	}
	return nil
}

// readMappings returns the content of the pod's MappingsFile, nil if
// there is none.
func (m *Manager) readMappings(uid types.UID) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(m.cfg.podDir(uid), MappingsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// writeMappings persists the pod's range atomically and durably: a
// temporary file synced and renamed over MappingsFile, then the directory
// synced, as the kubelet does. It creates the pod directory if needed.
func (m *Manager) writeMappings(uid types.UID, r IDRange) (err error) {
	data, err := json.Marshal(podMappings(r.First, r.Length))
	if err != nil {
		return err
	}
	dir := m.cfg.podDir(uid)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close() // already failed; the write error is the one to report
			if rmErr := os.Remove(tmp.Name()); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
				err = errors.Join(err, rmErr)
			}
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, MappingsFile)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close() // the sync error is the one to report
		return err
	}
	return d.Close()
}

// removeMappings deletes the pod's MappingsFile; a missing one is not an
// error.
func (m *Manager) removeMappings(uid types.UID) error {
	err := os.Remove(filepath.Join(m.cfg.podDir(uid), MappingsFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// listDirs lists the subdirectories of dir as pod UIDs.
func listDirs(dir string) ([]types.UID, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	uids := make([]types.UID, 0, len(entries))
	for _, e := range entries {
		if e.IsDir() {
			uids = append(uids, types.UID(e.Name()))
		}
	}
	return uids, nil
}
