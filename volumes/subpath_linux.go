//go:build linux

package volumes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxSymlinks is how many symlinks one subPath may go through: the
// kernel's limit for one path name.
const maxSymlinks = 40

// subPathWalk is the state of openSubPath: the directories opened so far,
// from the volume root down, each opened relative to the one above it.
type subPathWalk struct {
	root  string   // the volume's resolved path
	fds   []int    // fds[0] is the root
	names []string // names[i] is the name of fds[i+1] in fds[i]
	mode  uint32   // the root's mode, given to the directories made
}

// pathPart is one component still to walk.
type pathPart struct {
	name   string
	linked bool // it comes from a symlink's target: never created
}

// openSubPath opens sub (checked by checkSubPath) below the volume at root,
// one component at a time, each with openat relative to the directory
// above it and O_NOFOLLOW, so that no rename or symlink swap by a container
// can lead the walk out of the volume: what it returns is below the root
// whatever happens during the walk.
//
// A symlink met on the way is read and its target walked the same way, as
// the kubelet allows links that stay inside the volume: ".." never climbs
// above the root, and an absolute target must name a path in the volume.
// Every component but the last must be a directory.
//
// With create, the missing directories of sub are made with mkdirat, each
// with the mode of the root (so an fsGroup's setgid and group bits carry
// over); a symlink's missing target is an error, never made. Errors name
// components relative to the volume only.
func openSubPath(root, sub string, create bool) (*subPathFile, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(real, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open volume: %w", err)
	}
	w := &subPathWalk{root: real, fds: []int{fd}}
	defer w.close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat volume: %w", err)
	}
	w.mode = st.Mode & (unix.S_ISGID | unix.S_ISVTX | 0o777) // as the kubelet: no setuid bit
	var todo []pathPart
	for _, name := range splitPath(sub) {
		todo = append(todo, pathPart{name: name})
	}
	links := 0
	for len(todo) > 0 {
		p := todo[0]
		todo = todo[1:]
		if p.name == ".." {
			if len(w.fds) == 1 {
				return nil, w.errorf(p.name, errSubPathEscapes)
			}
			w.pop()
			continue
		}
		fd, err := w.open(p, create)
		if err != nil {
			return nil, err
		}
		if err := unix.Fstat(fd, &st); err != nil {
			closeFD(fd)
			return nil, w.errorf(p.name, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			w.fds = append(w.fds, fd)
			w.names = append(w.names, p.name)
		case unix.S_IFLNK:
			closeFD(fd)
			if links++; links > maxSymlinks {
				return nil, w.errorf(p.name, unix.ELOOP)
			}
			target, err := w.follow(p.name)
			if err != nil {
				return nil, err
			}
			todo = append(target, todo...)
		default:
			if len(todo) > 0 {
				closeFD(fd)
				return nil, w.errorf(p.name, unix.ENOTDIR)
			}
			return w.result(fd, p.name, &st), nil
		}
	}
	// The last directory opened is the subPath: take it from the walk.
	fd = w.fds[len(w.fds)-1]
	w.fds = w.fds[:len(w.fds)-1]
	if err := unix.Fstat(fd, &st); err != nil {
		closeFD(fd)
		return nil, err
	}
	return w.result(fd, "", &st), nil
}

// open opens name in the current directory without following it, making
// it first if it is missing and may be made.
func (w *subPathWalk) open(p pathPart, create bool) (int, error) {
	dir := w.fds[len(w.fds)-1]
	fd, err := unix.Openat(dir, p.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if !errors.Is(err, unix.ENOENT) || !create || p.linked {
		if err != nil {
			return -1, w.errorf(p.name, err)
		}
		return fd, nil
	}
	switch err := unix.Mkdirat(dir, p.name, w.mode&0o777); {
	case errors.Is(err, unix.EEXIST):
		// Made by someone else meanwhile: walk it as it is.
		if fd, err = unix.Openat(dir, p.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
			return -1, w.errorf(p.name, err)
		}
		return fd, nil
	case err != nil:
		return -1, w.errorf(p.name, fmt.Errorf("%w: %w", errSubPathCreate, err))
	}
	// O_RDONLY for fchmod, which an O_PATH descriptor cannot do. Fchmod:
	// the umask must not narrow the mode, and mkdir takes no setgid bit.
	fd, err = unix.Openat(dir, p.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		if err = unix.Fchmod(fd, w.mode); err != nil {
			closeFD(fd)
		}
	}
	if err != nil {
		return -1, w.errorf(p.name, fmt.Errorf("%w: %w", errSubPathCreate, err))
	}
	return fd, nil
}

// follow reads the symlink name in the current directory and returns the
// components of its target, relative to the current directory: an
// absolute target starts the walk again at the root, if it names a path in
// the volume.
func (w *subPathWalk) follow(name string) ([]pathPart, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(w.fds[len(w.fds)-1], name, buf)
	if err != nil {
		return nil, w.errorf(name, err)
	}
	if n == len(buf) {
		return nil, w.errorf(name, unix.ENAMETOOLONG)
	}
	target := string(buf[:n])
	if filepath.IsAbs(target) {
		abs := filepath.Clean(target)
		if !within(w.root, abs) {
			return nil, w.errorf(name, errSubPathEscapes)
		}
		for len(w.fds) > 1 {
			w.pop()
		}
		target = strings.TrimPrefix(abs, w.root)
	}
	var parts []pathPart
	for _, s := range strings.Split(target, "/") {
		if s != "" && s != "." {
			parts = append(parts, pathPart{name: s, linked: true})
		}
	}
	return parts, nil
}

// result makes the subPathFile of fd, the file name in the current
// directory ("" for the current directory itself).
func (w *subPathWalk) result(fd int, name string, st *unix.Stat_t) *subPathFile {
	path := filepath.Join(append([]string{w.root}, w.names...)...)
	return &subPathFile{fd: fd, path: filepath.Join(path, name), dir: st.Mode&unix.S_IFMT == unix.S_IFDIR,
		dev: uint64(st.Dev), ino: uint64(st.Ino)} // their widths differ by architecture
}

// pop closes the current directory and goes back to its parent.
func (w *subPathWalk) pop() {
	closeFD(w.fds[len(w.fds)-1])
	w.fds = w.fds[:len(w.fds)-1]
	w.names = w.names[:len(w.names)-1]
}

// close closes every directory the walk still holds.
func (w *subPathWalk) close() {
	for _, fd := range w.fds {
		closeFD(fd)
	}
	w.fds = nil
}

// errorf describes err on name in the current directory, naming it
// relative to the volume.
func (w *subPathWalk) errorf(name string, err error) error {
	return &os.PathError{Op: "subPath", Path: filepath.Join(filepath.Join(w.names...), name), Err: err}
}

// isAt reports whether path (a bind mount of it, say) is the file f holds.
func (f *subPathFile) isAt(path string) bool {
	var st unix.Stat_t
	return unix.Stat(path, &st) == nil && uint64(st.Dev) == f.dev && uint64(st.Ino) == f.ino
}
