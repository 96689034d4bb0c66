package volumes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

func splitPath(rel string) []string {
	var out []string
	for _, p := range strings.Split(filepath.Clean(rel), string(os.PathSeparator)) {
		if p != "" && p != "." {
			out = append(out, p)
		}
	}
	return out
}

// within reports whether path is root or below it (both cleaned).
func within(root, path string) bool {
	return path == root || strings.HasPrefix(path, root+string(os.PathSeparator))
}

// checkSubPath rejects a subPath that is absolute or climbs with "..".
func checkSubPath(sub string) error {
	if filepath.IsAbs(sub) {
		return fmt.Errorf("error SubPath `%s` must not be an absolute path", sub)
	}
	for _, p := range strings.Split(sub, string(os.PathSeparator)) {
		if p == ".." {
			return fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", sub)
		}
	}
	return nil
}

// resolveInside resolves the symlinks of root/sub and fails if the result
// leaves root. Symlinks that stay inside the volume are allowed, as on the
// kubelet.
func resolveInside(root, sub string) (string, string, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", "", err
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, sub))
	if err != nil {
		return "", "", err
	}
	if !within(realRoot, real) {
		return "", "", fmt.Errorf("subpath %q not within volume path %q", real, realRoot)
	}
	return realRoot, real, nil
}

// makeSubPath creates the missing directories of sub below root, each with
// the mode of root (so an fsGroup's setgid and group bits carry over). The
// part that exists must resolve inside root; the rest is made with
// mkdirNoFollow, so that nothing is created through a symlink.
func makeSubPath(root, sub string) error {
	info, err := os.Stat(root)
	if err != nil {
		return err
	}
	mode := info.Mode() & (os.ModePerm | os.ModeSetgid | os.ModeSticky)
	parts := splitPath(sub)
	existing := 0
	for existing < len(parts) {
		if _, err := os.Lstat(filepath.Join(append([]string{root}, parts[:existing+1]...)...)); err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				return err
			}
			break
		}
		existing++
	}
	base := root
	if existing > 0 {
		if _, base, err = resolveInside(root, filepath.Join(parts[:existing]...)); err != nil {
			return err
		}
	}
	return mkdirNoFollow(base, filepath.Join(parts[existing:]...), mode)
}

// subPathMount makes the host path a container mount of a volume's
// subPath points at: the subPath is created if missing, checked to stay
// inside the volume, then opened component by component without following
// symlinks and bind-mounted at <pod>/volume-subpaths/<volume>/<container>/<index>,
// so the path the runtime mounts cannot be swapped afterwards. With a
// Mounter that cannot bind (DirOnly) the checked path itself is returned.
func (m *Manager) subPathMount(ctx context.Context, pod *v1.Pod, volName, volPath, sub, container string, index int) (string, error) {
	if err := checkSubPath(sub); err != nil {
		return "", err
	}
	full := filepath.Join(volPath, sub)
	// Errors name no host path: the details go to the log only.
	if _, err := os.Lstat(full); errors.Is(err, os.ErrNotExist) {
		if err := makeSubPath(volPath, sub); err != nil {
			klog.FromContext(ctx).Error(err, "Failed to create subPath directory", "pod", klog.KObj(pod), "volume", volName, "container", container)
			return "", fmt.Errorf("failed to create subPath directory for volumeMount %q of container %q", volName, container)
		}
	}
	prepareErr := func(err error) error {
		klog.FromContext(ctx).Error(err, "Failed to prepare subPath", "pod", klog.KObj(pod), "volume", volName, "container", container)
		return fmt.Errorf("failed to prepare subPath for volumeMount %q of container %q", volName, container)
	}
	realRoot, real, err := resolveInside(volPath, sub)
	if err != nil {
		return "", prepareErr(err)
	}
	if m.cfg.Mounter == DirOnly {
		return real, nil
	}
	target := filepath.Join(m.PodDir(pod.UID), "volume-subpaths", volName, container, strconv.Itoa(index))
	if ok, err := m.isMountPoint(target); err != nil {
		return "", err
	} else if ok {
		if sameFile(target, real) {
			return target, nil // bound by an earlier start of this container
		}
		// The source changed (a new configMap version, another
		// subPathExpr value): bind again.
		if err := m.cfg.Mounter.Unmount(target); err != nil {
			return "", prepareErr(err)
		}
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil {
		return "", err
	}
	fd, err := openNoFollow(realRoot, rel)
	if err != nil {
		return "", prepareErr(err)
	}
	defer closeFD(fd)
	info, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return "", err
	}
	if info.IsDir() {
		err = os.Mkdir(target, 0o750)
	} else {
		var f *os.File
		if f, err = os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o640); err == nil {
			err = f.Close()
		}
	}
	if err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	if err := m.cfg.Mounter.BindMount(fmt.Sprintf("/proc/self/fd/%d", fd), target); err != nil {
		return "", prepareErr(err)
	}
	return target, nil
}
