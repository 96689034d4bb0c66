package volumes

import (
	"bufio"
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Mounter makes and removes the mounts volumes need: tmpfs for
// memory-backed emptyDirs and bind mounts that pin a subPath. HostMounter
// does it with mount(2); DirOnly, for runtimes whose containers never see
// the host (the CRI simulator), only keeps directories.
type Mounter interface {
	// MountTmpfs mounts a tmpfs limited to sizeBytes (0: no limit) on target.
	MountTmpfs(target string, sizeBytes int64) error
	// BindMount makes target show source (a path or /proc/self/fd/N).
	BindMount(source, target string) error
	// Unmount removes the mount on target.
	Unmount(target string) error
	// MountPoints lists every mount point of the host.
	MountPoints() ([]string, error)
}

// MountPointChecker is an optional interface of a Mounter that can tell
// whether one directory is a mount point without listing every mount;
// HostMounter implements it. A Mounter without it is asked for
// MountPoints.
type MountPointChecker interface {
	// IsMountPoint reports whether dir is the root of a mount; a missing
	// dir is not.
	IsMountPoint(dir string) (bool, error)
}

// isMountPoint asks m's MountPointChecker, or looks dir up in m's mount
// table.
func isMountPoint(m Mounter, dir string) (bool, error) {
	if c, ok := m.(MountPointChecker); ok {
		return c.IsMountPoint(dir)
	}
	return mountTableHas(m, dir)
}

// mountTableHas reports whether dir is in m's list of mount points.
func mountTableHas(m Mounter, dir string) (bool, error) {
	all, err := m.MountPoints()
	if err != nil {
		return false, err
	}
	return slices.Contains(all, dir), nil
}

// DirOnly is the Mounter of a runtime that does not run real containers:
// it mounts nothing, so a memory-backed emptyDir is a plain directory and a
// subPath is handed to the runtime as a resolved path.
func DirOnly() Mounter { return dirOnly{} }

type dirOnly struct{}

func (dirOnly) MountTmpfs(string, int64) error { return nil }
func (dirOnly) BindMount(string, string) error {
	return errors.New("bind mounts are not available without a host mounter")
}
func (dirOnly) Unmount(string) error           { return nil }
func (dirOnly) MountPoints() ([]string, error) { return nil, nil }

// parseMountInfo returns the mount points of a /proc/<pid>/mountinfo
// stream (field 5, octal escapes decoded).
func parseMountInfo(r io.Reader) ([]string, error) {
	var out []string
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 5 {
			continue
		}
		out = append(out, unescapeOctal(f[4]))
	}
	return out, s.Err()
}

// unescapeOctal decodes the \NNN escapes the kernel puts in mount paths.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountPointsUnder returns the mount points at or below dir, deepest first.
func mountPointsUnder(m Mounter, dir string) ([]string, error) {
	all, err := m.MountPoints()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range all {
		if p == dir || strings.HasPrefix(p, dir+string(os.PathSeparator)) {
			out = append(out, p)
		}
	}
	// deepest first, so that nested mounts go before their parents
	slices.SortFunc(out, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(out), nil
}
