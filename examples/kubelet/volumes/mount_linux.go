//go:build linux

package volumes

import (
	"errors"
	"fmt"
	"os"

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
