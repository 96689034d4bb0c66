//go:build !linux

package volumes

// openSubPath needs openat and /proc/self/fd: off Linux no subPath opens.
func openSubPath(string, string, bool) (*subPathFile, error) { return nil, errNoMounts }

func (*subPathFile) isAt(string) bool { return false }
