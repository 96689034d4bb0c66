// Package clientmetrics gives client-go's REST client and work queues the
// metric families a kubelet serves (rest_client_*, workqueue_*), on the
// host's registry.
//
// # Model
//
// client-go reports through process-global hooks:
// k8s.io/client-go/tools/metrics.Register (once per process) and
// k8s.io/client-go/util/workqueue.SetProvider (once per process).
// component-base fills them from package init functions, on its global
// legacy registry. A library must not: New only builds the collectors on
// Config.Registerer and returns the adapters; the program's main installs
// them, once, before it builds any client:
//
//	m, err := clientmetrics.New(clientmetrics.Config{Registerer: reg})
//	if err != nil { return err }
//	metrics.Register(m.RESTClient())      // k8s.io/client-go/tools/metrics
//	workqueue.SetProvider(m.Workqueues()) // k8s.io/client-go/util/workqueue
//
// Families, with component-base's names, help, labels and buckets:
// rest_client_request_duration_seconds, rest_client_request_size_bytes,
// rest_client_response_size_bytes, rest_client_rate_limiter_duration_seconds,
// rest_client_requests_total, rest_client_request_retries_total,
// rest_client_exec_plugin_ttl_seconds,
// rest_client_exec_plugin_certificate_rotation_age,
// rest_client_exec_plugin_call_total, rest_client_transport_cache_entries,
// rest_client_transport_create_calls_total,
// rest_client_transport_ca_reload_total,
// rest_client_transport_cert_rotation_gc_calls_total,
// rest_client_transport_cache_gc_calls_total; workqueue_depth,
// workqueue_adds_total, workqueue_queue_duration_seconds,
// workqueue_work_duration_seconds, workqueue_unfinished_work_seconds,
// workqueue_longest_running_processor_seconds and workqueue_retries_total
// (by queue name).
//
// # Host duties
//
//  1. In the program's main (never in a library), build a Metrics on the
//     node's registry and install RESTClient and Workqueues as above,
//     before the first client or queue exists (client-go reads the hooks
//     when it builds them, and keeps the first ones installed).
//  2. Serve the registry at /metrics.
//
// # Differences from upstream
//
//   - Like component-base, the DNS resolver latency and the exec plugin
//     policy calls are not served (component-base builds them but never
//     registers them); their hooks stay client-go's no-ops.
//   - rest_client_exec_plugin_ttl_seconds counts down on Config.Clock.
//   - Nothing is installed by New: the two global hooks are the
//     program's to set.
package clientmetrics
