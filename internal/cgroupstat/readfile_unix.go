//go:build unix

package cgroupstat

import (
	"io/fs"
	"syscall"
)

// ReadFile reads the file at p into buf's storage, grown as needed, and
// returns it; buf may be nil. It opens the file with plain system calls:
// cgroup and procfs files are never pollable, so the runtime poller's
// registration that os.Open does for every file (a fcntl and an
// epoll_ctl) is only cost, about a third of a scrape's time. Errors are
// *fs.PathError, so errors.Is(err, fs.ErrNotExist) holds as with os.
func ReadFile(p string, buf []byte) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer syscall.Close(fd)
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "read", Path: p, Err: err}
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}
