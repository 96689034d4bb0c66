// Package diskusage measures what a directory holds on disk, as du does,
// for the blocks that report volume and log usage (volumes, eviction).
package diskusage
