// Package criinstrument measures the calls a node agent makes to its CRI
// container runtime and image service, as the kubelet's instrumented
// runtime services (pkg/kubelet/kuberuntime/instrumented_services.go) do:
// every call is counted, timed and, when it fails, counted as an error,
// by operation.
//
// # Model
//
// New registers the collectors on Config.Registerer and returns a
// [Metrics]. Its Runtime and Images methods wrap a
// k8s.io/cri-api/pkg/apis RuntimeService and ImageManagerService (what
// k8s.io/cri-client's NewRemoteRuntimeService and NewRemoteImageService
// return); the wrappers implement the same interfaces, so every block
// that takes a runtime takes them unchanged. One Metrics may wrap any
// number of services; their calls add up in the same families.
//
// Families (upstream's names, help, labels and buckets):
//
//   - kubelet_runtime_operations_total{operation_type}
//   - kubelet_runtime_operations_errors_total{operation_type}
//   - kubelet_runtime_operations_duration_seconds{operation_type}
//     (buckets 5ms × 2.5ⁿ, 14 of them)
//   - kubelet_run_podsandbox_duration_seconds{runtime_handler}
//   - kubelet_run_podsandbox_errors_total{runtime_handler}
//
// operation_type is upstream's name of the call: version, status,
// create_container, start_container, stop_container, remove_container,
// list_containers, container_status, update_container,
// reopen_container_log, exec_sync, exec, attach, run_podsandbox,
// stop_podsandbox, remove_podsandbox, podsandbox_status, list_podsandbox,
// container_stats, list_container_stats, podsandbox_stats,
// list_podsandbox_stats, port_forward, update_podsandbox_resources,
// update_runtime_config, checkpoint_container, get_container_events,
// list_metric_descriptors, list_podsandbox_metrics, runtime_config,
// list_images, image_status, pull_image, remove_image, image_fs_info and
// close.
//
// # Host duties
//
//  1. Connect the runtime and image service (cri-client).
//  2. Build one Metrics with New, on the registry the node's /metrics
//     serves (nil Registerer: the wrappers only pass calls through).
//  3. Wrap both services (Runtime, Images) and hand the wrappers, never
//     the raw clients, to every block, so that every call is measured.
//
// In code:
//
//	rt, _ := remote.NewRemoteRuntimeService(ctx, endpoint, 2*time.Minute, nil, false)
//	img, _ := remote.NewRemoteImageService(ctx, endpoint, 2*time.Minute, nil, false)
//	m, err := criinstrument.New(criinstrument.Config{Registerer: reg})
//	if err != nil { return err }
//	runtime, images := m.Runtime(rt), m.Images(img)
//	// pleg.Config{Runtime: runtime}, podsyncer.Config{Runtime: runtime, Images: images}, ...
//
// # Differences from upstream
//
//   - Durations are measured on Config.Clock, not on time.Now.
//   - A failed ImageFsInfo returns its error (upstream's wrapper counts
//     the error and then returns nil).
//   - The collectors are the host's (Config.Registerer), not package
//     globals; registering them twice on one registry is an error from New.
package criinstrument
