package diskusage

import "golang.org/x/sys/unix"

// Statfs reports the filesystem holding path.
func Statfs(path string) (Fs, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return Fs{}, err
	}
	bs := uint64(st.Bsize)
	return Fs{
		Capacity: st.Blocks * bs, Available: st.Bavail * bs, Used: (st.Blocks - st.Bfree) * bs,
		Inodes: st.Files, InodesFree: st.Ffree, InodesUsed: st.Files - st.Ffree,
	}, nil
}
