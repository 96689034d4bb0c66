package volumes

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// File is one file of a projected payload: its bytes, its permission bits
// and, if set, the user that owns it.
type File struct {
	Data []byte
	Mode int32
	// FsUser, if set, owns the file (service account tokens read by a
	// single non-root user).
	FsUser *int64
}

// The names an atomically written directory keeps for itself. Payload
// paths may not begin with "..".
const (
	dataLink    = "..data"
	dataLinkTmp = "..data_tmp"
)

// validatePayloadPath rejects a path that is absolute, climbs out of the
// volume or would collide with the writer's own names.
func validatePayloadPath(p string) error {
	switch {
	case p == "":
		return errors.New("invalid path: must not be empty")
	case filepath.IsAbs(p):
		return fmt.Errorf("invalid path: must be relative path: %s", p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("invalid path: must not start with '..': %s", p)
	case len(p) > 4096:
		return fmt.Errorf("invalid path: must be less than or equal to 4096 characters")
	}
	for _, part := range strings.Split(p, string(os.PathSeparator)) {
		if part == ".." {
			return fmt.Errorf("invalid path: must not contain '..': %s", p)
		}
		if len(part) > 255 {
			return fmt.Errorf("invalid path: each path segment must be less than or equal to 255 characters")
		}
	}
	return nil
}

// atomicWrite makes dir hold exactly payload, so that a reader sees either
// the whole old set of files or the whole new one.
//
// Layout (the kubelet's, which tools and workloads rely on): the files live
// in a hidden timestamped directory; "..data" is a symlink to it; each
// top-level payload name is a symlink through "..data". An update writes a
// new timestamped directory, swaps "..data" with one rename, then fixes the
// top-level links and removes the old directory. setPerms, if set, runs on
// the new directory before the swap. A payload equal to what is on disk
// changes nothing.
func atomicWrite(dir string, payload map[string]File, now time.Time, setPerms func(string) error) error {
	clean := make(map[string]File, len(payload))
	for p, f := range payload {
		if err := validatePayloadPath(p); err != nil {
			return err
		}
		clean[filepath.Clean(p)] = f
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	oldTS, _ := os.Readlink(filepath.Join(dir, dataLink))
	if oldTS != "" && sameContent(filepath.Join(dir, oldTS), clean) {
		return linkTopLevel(dir, clean)
	}
	tsDir, err := os.MkdirTemp(dir, now.UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return fmt.Errorf("create timestamped directory: %w", err)
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return err
	}
	if err := writeFiles(tsDir, clean); err != nil {
		_ = os.RemoveAll(tsDir)
		return err
	}
	if setPerms != nil {
		if err := setPerms(tsDir); err != nil {
			_ = os.RemoveAll(tsDir)
			return err
		}
	}
	tmp := filepath.Join(dir, dataLinkTmp)
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(tsDir), tmp); err != nil {
		_ = os.RemoveAll(tsDir)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataLink)); err != nil {
		_ = os.Remove(tmp)
		_ = os.RemoveAll(tsDir)
		return err
	}
	if err := linkTopLevel(dir, clean); err != nil {
		return err
	}
	if err := removeStaleTopLevel(dir, clean); err != nil {
		return err
	}
	if oldTS != "" && oldTS != filepath.Base(tsDir) {
		if err := os.RemoveAll(filepath.Join(dir, oldTS)); err != nil {
			return err
		}
	}
	return nil
}

// topLevel returns the first element of each payload path.
func topLevel(payload map[string]File) []string {
	seen := map[string]bool{}
	var out []string
	for p := range payload {
		first, _, _ := strings.Cut(p, string(os.PathSeparator))
		if !seen[first] {
			seen[first] = true
			out = append(out, first)
		}
	}
	slices.Sort(out)
	return out
}

func writeFiles(root string, payload map[string]File) error {
	for p, f := range payload {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.Data, 0o600); err != nil {
			return err
		}
		// Chmod: the process umask must not narrow the asked mode.
		if err := os.Chmod(full, os.FileMode(f.Mode)&os.ModePerm); err != nil {
			return err
		}
		if f.FsUser != nil {
			if err := os.Chown(full, int(*f.FsUser), -1); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameContent reports whether tsDir holds exactly payload, bytes and
// modes.
func sameContent(tsDir string, payload map[string]File) bool {
	n := 0
	err := filepath.WalkDir(tsDir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(tsDir, path)
		f, ok := payload[rel]
		if !ok {
			return errors.New("extra file")
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm() != os.FileMode(f.Mode)&os.ModePerm {
			return errors.New("mode changed")
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(b, f.Data) {
			return errors.New("content changed")
		}
		n++
		return nil
	})
	return err == nil && n == len(payload)
}

// linkTopLevel creates "name -> ..data/name" for every top-level payload
// name that has no link yet.
func linkTopLevel(dir string, payload map[string]File) error {
	for _, name := range topLevel(payload) {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(dataLink, name), link); err != nil {
			return err
		}
	}
	return nil
}

// removeStaleTopLevel removes the top-level links of names no longer in
// the payload.
func removeStaleTopLevel(dir string, payload map[string]File) error {
	keep := map[string]bool{}
	for _, n := range topLevel(payload) {
		keep[n] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "..") || keep[name] {
			continue
		}
		if e.Type()&os.ModeSymlink == 0 {
			continue // not ours (a nested mount point, for example)
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}
