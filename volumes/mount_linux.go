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
func HostMounter() Mounter { return hostMounter{} }

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

// IsMountPoint reports whether dir is the root of a mount, from statx's
// STATX_ATTR_MOUNT_ROOT (Linux 5.8 and later): one system call instead of a
// read of the whole mount table, which grows with every container. On a
// kernel that does not report the attribute it reads the mount table.
func (h hostMounter) IsMountPoint(dir string) (bool, error) {
	var st unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, dir, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS, &st)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		if !errors.Is(err, unix.ENOSYS) {
			return false, fmt.Errorf("statx %s: %w", dir, err)
		}
	} else if st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, nil
	}
	return mountTableHas(h, dir)
}

func closeFD(fd int) { _ = unix.Close(fd) }

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
