//go:build unix

package prober

import "syscall"

// lingerZero sets SO_LINGER to 0 on a probe socket before it connects, so
// that every close of it, including Go's own close of a dial cancelled
// after the handshake, resets the connection instead of entering TIME-WAIT.
func lingerZero(_, _ string, c syscall.RawConn) error {
	var err error
	if cerr := c.Control(func(fd uintptr) {
		err = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 0})
	}); cerr != nil {
		return cerr
	}
	return err
}
