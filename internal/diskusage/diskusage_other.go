//go:build !linux

package diskusage

import (
	"os"
	"path/filepath"
)

// Of is what dir holds: file sizes and entries (no block counts off
// Linux).
func Of(dir string) (bytes, inodes uint64, err error) {
	if _, err := os.Lstat(dir); err != nil {
		return 0, 0, err
	}
	err = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			bytes += uint64(info.Size())
		}
		inodes++
		return nil
	})
	return bytes, inodes, err
}
