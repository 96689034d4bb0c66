// Package logrotate is the kubelet's container log manager as a block: it
// keeps each running container's CRI log file under a size, as the
// kubelet does with containerLogMaxSize and containerLogMaxFiles.
//
// # Model
//
// Every MonitorInterval a pass lists the runtime's running containers and
// looks at each one's log file (its CRI LogPath), MaxWorkers at a time.
// A file at or over MaxSize is rotated: leftovers of an interrupted
// rotation (".tmp" files, plain copies of files already compressed) are
// removed, the oldest rotated files go until MaxFiles−2 are left, every
// rotated file not yet compressed is gzipped ("<log>.<time>.gz"), then the
// live file is renamed "<log>.<YYYYMMDD-hhmmss>" (the injected clock's
// time) and the runtime asked to reopen the container's log
// (ReopenContainerLog). If the runtime cannot reopen it, the rename is
// undone, so nothing is lost and the next pass tries again. A log file
// that is missing is reopened first. So a container keeps at most
// MaxFiles files: the live one, the last rotated one uncompressed (a log
// shipper may still be reading it), and compressed older ones.
//
// Clean removes every log file of a container (the live and the rotated
// ones), for the host's container garbage collection.
//
// # Host duties
//
// The host gives the CRI runtime service, runs Run, and calls Clean when
// it removes a container. Log files are read and written as the runtime
// laid them out; nothing here parses their content.
//
// # Differences from upstream (kubelet v1.36 pkg/kubelet/logs)
//
//   - A pass waits for its containers before the next: no container is
//     queued twice, and there is no rate-limited work queue.
//   - Times in rotated names come from the injected clock.
package logrotate
