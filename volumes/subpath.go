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

// Errors openSubPath wraps: an escape refused, and a directory it could
// not make (which subPathMount reports as the kubelet does).
var (
	errSubPathEscapes = errors.New("volumes: subPath leaves the volume")
	errSubPathCreate  = errors.New("volumes: cannot create subPath directory")
)

// subPathFile is a subPath opened by openSubPath: the file or directory
// its walk checked, held by a file descriptor, so that what gets bound is
// that very file whatever a container renames afterwards.
type subPathFile struct {
	fd       int
	path     string // the volume's resolved path joined with the names walked
	dir      bool
	dev, ino uint64
}

// source names the file itself for mount(2), whatever its path is now.
func (f *subPathFile) source() string { return "/proc/self/fd/" + strconv.Itoa(f.fd) }

func (f *subPathFile) close() { closeFD(f.fd) }

// makeSubPath creates the missing directories of sub below root, each with
// the mode of root (so an fsGroup's setgid and group bits carry over),
// walking from root as openSubPath does.
func makeSubPath(root, sub string) error {
	f, err := openSubPath(root, sub, true)
	if err != nil {
		return err
	}
	f.close()
	return nil
}

// subPathMount makes the host path a container mount of a volume's
// subPath points at: the subPath is opened from the volume's root one
// component at a time without following symlinks out of the volume, its
// missing directories created on the way (openSubPath), and the file
// descriptor opened is bind-mounted (as /proc/self/fd/N) at
// <pod>/volume-subpaths/<volume>/<container>/<index>, so the runtime
// mounts the very file checked. With a Mounter that cannot bind (DirOnly)
// the resolved path is returned.
func (m *Manager) subPathMount(ctx context.Context, pod *v1.Pod, volName, volPath, sub, container string, index int) (string, error) {
	if err := checkSubPath(sub); err != nil {
		return "", err
	}
	// Errors name no host path: the details go to the log only.
	fail := func(what string, err error) error {
		klog.FromContext(ctx).Error(err, "Failed to "+what, "pod", klog.KObj(pod), "volume", volName, "container", container)
		return fmt.Errorf("failed to %s for volumeMount %q of container %q", what, volName, container)
	}
	f, err := openSubPath(volPath, sub, true)
	if errors.Is(err, errSubPathCreate) {
		return "", fail("create subPath directory", err)
	} else if err != nil {
		return "", fail("prepare subPath", err)
	}
	defer f.close()
	if _, ok := m.cfg.Mounter.(dirOnly); ok {
		return f.path, nil
	}
	target := filepath.Join(m.PodDir(pod.UID), "volume-subpaths", volName, container, strconv.Itoa(index))
	if ok, err := isMountPoint(m.cfg.Mounter, target); err != nil {
		return "", fail("prepare subPath", err)
	} else if ok {
		if f.isAt(target) {
			return target, nil // bound by an earlier start of this container
		}
		// The source changed (a new configMap version, another
		// subPathExpr value): bind again.
		if err := m.cfg.Mounter.Unmount(target); err != nil {
			return "", fail("prepare subPath", err)
		}
	}
	if err := makeMountTarget(target, f.dir); err != nil {
		return "", fail("prepare subPath", err)
	}
	if err := m.cfg.Mounter.BindMount(f.source(), target); err != nil {
		return "", fail("prepare subPath", err)
	}
	return target, nil
}

// makeMountTarget makes the directory or empty file a bind mount goes on,
// if missing.
func makeMountTarget(target string, dir bool) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	var err error
	if dir {
		err = os.Mkdir(target, 0o750)
	} else {
		var f *os.File
		if f, err = os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o640); err == nil {
			err = f.Close()
		}
	}
	if err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}
