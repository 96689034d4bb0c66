package cgroups

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// HostIsV2 reports whether the cgroup filesystem at mount (default
// /sys/fs/cgroup) is the unified hierarchy (cgroup v2).
func HostIsV2(mount string) bool {
	if mount == "" {
		mount = "/sys/fs/cgroup"
	}
	_, err := os.Stat(filepath.Join(mount, "cgroup.controllers"))
	return err == nil
}

// ErrCgroupV1 is returned by CheckHost when the host uses cgroup v1 and
// failing on it was asked for.
var ErrCgroupV1 = errors.New("this host uses cgroup v1, which the kubelet refuses by default since v1.35; set failCgroupV1: false (--fail-cgroupv1=false) to run on it")

// ErrSwapOn is returned by CheckHost when swap is enabled and failing on it
// was asked for.
var ErrSwapOn = errors.New("running with swap on is not supported: disable swap or set failSwapOn: false (--fail-swap-on=false)")

// CheckHost refuses a host the kubelet would refuse at start-up: swap
// enabled (listed in procSwaps, default /proc/swaps) when failSwapOn, and
// cgroup v1 under mount when failCgroupV1.
func CheckHost(mount, procSwaps string, failSwapOn, failCgroupV1 bool) error {
	if failCgroupV1 && !HostIsV2(mount) {
		return ErrCgroupV1
	}
	if !failSwapOn {
		return nil
	}
	if procSwaps == "" {
		procSwaps = "/proc/swaps"
	}
	on, err := swapEnabled(procSwaps)
	if err != nil {
		return fmt.Errorf("cgroups: swap: %w", err)
	}
	if on {
		return ErrSwapOn
	}
	return nil
}

// swapEnabled reads a /proc/swaps table: a header, then one line per swap
// device or file.
func swapEnabled(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil // no swap support in the kernel
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			lines++
		}
	}
	return lines > 1, sc.Err()
}
