package diskusage

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Of is what dir holds within its own filesystem: allocated bytes
// and inodes, as du counts them (hard links once).
func Of(dir string) (bytes, inodes uint64, err error) {
	var root unix.Stat_t
	if err := unix.Lstat(dir, &root); err != nil {
		return 0, 0, err
	}
	seen := map[uint64]bool{}
	err = filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile, or unreadable: not counted
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			return nil
		}
		if st.Dev != root.Dev {
			return filepath.SkipDir // another filesystem mounted inside
		}
		if st.Nlink > 1 && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		bytes += uint64(st.Blocks) * 512
		inodes++
		return nil
	})
	return bytes, inodes, err
}
