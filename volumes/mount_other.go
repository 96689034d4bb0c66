//go:build !linux

package volumes

import "errors"

// HostMounter is not available off Linux: every call fails.
func HostMounter() Mounter { return unsupportedMounter{} }

type unsupportedMounter struct{}

var errNoMounts = errors.New("mounts need Linux")

func (unsupportedMounter) MountTmpfs(string, int64) error { return errNoMounts }
func (unsupportedMounter) BindMount(string, string) error { return errNoMounts }
func (unsupportedMounter) Unmount(string) error           { return errNoMounts }
func (unsupportedMounter) MountPoints() ([]string, error) { return nil, errNoMounts }

func closeFD(int) {}
