//go:build linux

package volumes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// HostMounter mounts with the host's mount(2); the agent needs
// CAP_SYS_ADMIN for it, as the kubelet does.
var HostMounter Mounter = hostMounter{}

type hostMounter struct{}

func (hostMounter) MountTmpfs(target string, size int64) error {
	data := ""
	if size > 0 {
		data = fmt.Sprintf("size=%d", size)
	}
	if err := unix.Mount("tmpfs", target, "tmpfs", 0, data); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", target, err)
	}
	return nil
}

func (hostMounter) BindMount(source, target string) error {
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount %s on %s: %w", source, target, err)
	}
	return nil
}

func (hostMounter) Unmount(target string) error {
	err := unix.Unmount(target, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(target, unix.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", target, err)
	}
	return nil
}

func (hostMounter) MountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMountInfo(f)
}

// openNoFollow opens each component of rel below root without following
// symlinks (O_PATH|O_NOFOLLOW at every step), so that a path swapped for a
// symlink between the check and the open cannot lead out of root. It
// returns the final file descriptor.
func openNoFollow(root, rel string) (int, error) {
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", root, err)
	}
	for _, part := range splitPath(rel) {
		next, err := unix.Openat(fd, part, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("open %s below %s: %w", part, root, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			return -1, err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(next)
			return -1, fmt.Errorf("%s below %s is a symlink", part, root)
		}
		fd = next
	}
	return fd, nil
}

func closeFD(fd int) { _ = unix.Close(fd) }

// mkdirNoFollow creates the directories of rel below root (which must
// exist and hold no symlink the caller has not checked), each with mode,
// one component at a time through directory file descriptors opened with
// O_NOFOLLOW, so that no component swapped for a symlink can make it
// create or chmod anything outside root.
func mkdirNoFollow(root, rel string, mode os.FileMode) error {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", root, err)
	}
	defer func() { _ = unix.Close(fd) }()
	perm := uint32(mode.Perm())
	if mode&os.ModeSetgid != 0 {
		perm |= unix.S_ISGID
	}
	if mode&os.ModeSticky != 0 {
		perm |= unix.S_ISVTX // a tmpfs root's 1777 carries over, as the kubelet's
	}
	for _, part := range splitPath(rel) {
		created := false
		err := unix.Mkdirat(fd, part, perm&0o777)
		switch {
		case err == nil:
			created = true
		case !errors.Is(err, unix.EEXIST):
			return fmt.Errorf("mkdir %s below %s: %w", part, root, err)
		}
		next, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return fmt.Errorf("open %s below %s: %w", part, root, err)
		}
		_ = unix.Close(fd)
		fd = next
		if created {
			// Fchmod: the umask must not narrow the mode, and the
			// setgid bit is not taken from mkdir.
			if err := unix.Fchmod(fd, perm); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameFile reports whether two paths are the same inode.
func sameFile(a, b string) bool {
	var sa, sb unix.Stat_t
	return unix.Stat(a, &sa) == nil && unix.Stat(b, &sb) == nil && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// removeOneFilesystem removes dir and everything below it, refusing to
// enter anything on another filesystem (a mount missed by the mount
// table), so that nothing beyond the pod's own files is ever deleted.
func removeOneFilesystem(dir string) error {
	var root unix.Stat_t
	if err := unix.Lstat(dir, &root); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	var remove func(p string) error
	remove = func(p string) error {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			return err
		}
		if st.Dev != root.Dev {
			return fmt.Errorf("%s is on another filesystem; not removing it", p)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			entries, err := os.ReadDir(p)
			if err != nil {
				return err
			}
			for _, e := range entries {
				if err := remove(filepath.Join(p, e.Name())); err != nil {
					return err
				}
			}
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return remove(dir)
}
