// Package imagegc is the kubelet's image garbage collector as a block: it
// keeps a record of every image the runtime holds (first detected, last
// used, size, pinned), and removes unused images when the image
// filesystem fills or an image has not been used for too long.
//
// # Model
//
// A pass (GarbageCollect) lists the runtime's images and containers. An
// image is in use while any container, running or not, was created from
// it or mounts it as an image volume; its last use is then the pass's
// time. Unused, unpinned images are ordered by last use, ties broken by
// first detection, oldest first. With Policy.MaxAge set, and once MaxAge
// has passed since the collector started, every such image unused for
// longer than MaxAge is removed (reason "age"). Then, when the image
// filesystem's usage is at or above HighThresholdPercent, images are
// removed in that order (none detected less than MinAge ago) until usage
// is back at LowThresholdPercent (reason "space"); when that cannot be
// reached, the pass fails with the kubelet's FreeDiskSpaceFailed event.
// DeleteUnusedImages removes every unused image old enough, for the
// eviction manager's reclaim under disk pressure.
//
// Run makes a pass at once and then every Period (the kubelet's five
// minutes) on the injected clock; a pass that fails twice in a row
// records the kubelet's ImageGCFailed event on the Node. NextWake tells
// clockdrive when the next pass is due.
//
// # Host duties
//
// The host gives the CRI image and runtime services and the image
// filesystem's capacity and free bytes (ImageFs: the stats block's
// runtime image filesystem, or statfs of the runtime's image store), runs
// Run, and hands DeleteUnusedImages to the eviction manager
// (eviction.Config.DeleteUnusedImages). The pause image is protected when
// the runtime reports it pinned (containerd and CRI-O do).
//
// # Differences from upstream (kubelet v1.36 pkg/kubelet/images)
//
//   - Records are kept by image ID; the RuntimeClassInImageCriAPI
//     (alpha) tuple of image and runtime handler is not.
//   - The list of images the kubelet caches every 30 seconds for the Node
//     status is not kept here: nodestatus/crinode lists images itself.
//   - There are no post-GC hooks (the kubelet's ensure-secret-pulled-
//     images records).
package imagegc
