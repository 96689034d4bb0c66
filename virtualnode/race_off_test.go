//go:build !race

package virtualnode

// raceEnabled: the race detector changes what allocates; allocation counts
// are checked without it.
const raceEnabled = false
