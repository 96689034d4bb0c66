// Package cadvisorinfo reads the real machine with cadvisor for
// nodestatus.MachineInfo, and the kubelet root filesystem's size for the
// ephemeral-storage capacity.
//
// It is a separate package because cadvisor's machine package registers
// two command-line flags (machine_id_file, boot_id_file) on the global
// flag set when it is imported; nodestatus itself registers nothing.
package cadvisorinfo

import (
	"fmt"
	"sync"

	"github.com/google/cadvisor/fs"
	cadvisorapi "github.com/google/cadvisor/info/v1"
	"github.com/google/cadvisor/machine"
	"github.com/google/cadvisor/utils/sysfs"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Machine returns a func for nodestatus.MachineConfig.Machine that reads
// the machine once through cadvisor (cores, memory, hugepages, swap,
// topology, machine/system/boot IDs) and then serves the cached result, as
// the kubelet does. A failed read is retried on the next call.
func Machine() func() (*cadvisorapi.MachineInfo, error) {
	var (
		mu   sync.Mutex
		info *cadvisorapi.MachineInfo
	)
	return func() (*cadvisorapi.MachineInfo, error) {
		mu.Lock()
		defer mu.Unlock()
		if info != nil {
			return info, nil
		}
		fsInfo, err := fs.NewFsInfo(fs.Context{})
		if err != nil {
			return nil, fmt.Errorf("cadvisorinfo: filesystems: %w", err)
		}
		i, err := machine.Info(sysfs.NewRealSysFs(), fsInfo, true)
		if err != nil {
			return nil, fmt.Errorf("cadvisorinfo: machine info: %w", err)
		}
		info = i
		return info, nil
	}
}

// EphemeralStorage returns a func for nodestatus.MachineConfig.Capacity
// that reports the size of the filesystem holding dir (the kubelet's root
// directory, /var/lib/kubelet on a real node) as ephemeral-storage.
func EphemeralStorage(dir string) func() v1.ResourceList {
	return func() v1.ResourceList {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			return nil
		}
		return v1.ResourceList{v1.ResourceEphemeralStorage: *resource.NewQuantity(int64(st.Blocks)*st.Bsize, resource.BinarySI)}
	}
}
