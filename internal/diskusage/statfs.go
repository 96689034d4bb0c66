package diskusage

// Fs is what statfs(2) reports of a filesystem, in bytes and inodes, as
// the kubelet's fs.Info computes it: Available is what an unprivileged
// user may still allocate, Used the blocks not free (so Used + Available
// falls short of Capacity by the blocks reserved for root).
type Fs struct {
	Capacity, Available, Used      uint64
	Inodes, InodesFree, InodesUsed uint64
}
