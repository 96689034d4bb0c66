// Package diskusage measures what a directory holds on disk, as du does,
// and the filesystem it is on, as statfs does, for the blocks that report
// volume and log usage (volumes, stats).
package diskusage
