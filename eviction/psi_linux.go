//go:build linux

package eviction

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// filesystems whose pressure files accept PSI triggers.
const (
	procSuperMagic    = 0x9fa0
	cgroup2SuperMagic = 0x63677270
)

// watch arms a PSI trigger and blocks in poll(2) until ctx is done (nil)
// or the trigger cannot be armed or fails (error).
func (n *PSINotifier) watch(ctx context.Context, notify func()) error {
	fd, err := unix.Open(n.cfg.Path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", n.cfg.Path, err)
	}
	defer unix.Close(fd)
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", n.cfg.Path, err)
	}
	if st.Type != procSuperMagic && st.Type != cgroup2SuperMagic {
		return fmt.Errorf("%s is not a PSI file (filesystem 0x%x)", n.cfg.Path, st.Type)
	}
	if _, err := unix.Write(fd, append([]byte(n.trigger()), 0)); err != nil {
		return fmt.Errorf("arm PSI trigger %q on %s: %w", n.trigger(), n.cfg.Path, err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	defer unix.Close(wake)
	// A helper goroutine turns cancellation into an eventfd write so that
	// poll(2) can wait without a timeout; it is joined before returning.
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-ctx.Done():
			_, _ = unix.Write(wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
		case <-done:
		}
	})
	defer wg.Wait()
	defer close(done)
	if n.armed != nil {
		n.armed()
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}, {Fd: int32(wake), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("poll %s: %w", n.cfg.Path, err)
		}
		if fds[1].Revents != 0 {
			return nil
		}
		switch ev := fds[0].Revents; {
		case ev&unix.POLLERR != 0:
			return fmt.Errorf("PSI trigger on %s failed (POLLERR)", n.cfg.Path)
		case ev&unix.POLLPRI != 0:
			notify()
		}
	}
}
