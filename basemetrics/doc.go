// Package basemetrics registers the metric families every kubelet serves
// whatever its parts do: the Go runtime's (go_*) and the process's
// (process_*) collectors, kubernetes_build_info and kubelet_node_name, on
// the host's registry instead of component-base's global one.
//
// # Model
//
// Register adds, on Config.Registerer:
//
//   - the Go collector with every runtime/metrics family, as
//     component-base's legacy registry has it (go_*);
//   - the process collector (process_*, on platforms that have one);
//   - kubernetes_build_info{major,minor,git_version,git_commit,
//     git_tree_state,build_date,go_version,compiler,platform} = 1, from
//     Config.Version and the binary's build information ([ReadInfo]);
//   - kubelet_node_name{node} = 1 when Config.NodeName is set.
//
// Help texts carry the stability level as component-base writes it
// ("[BETA] ...", "[ALPHA] ..."). There is nothing to run: Register is the
// whole package.
//
// # Host duties
//
//  1. Make one registry for the node's /metrics.
//  2. Call Register once with it, the node's name and the version the
//     agent reports (its Node's kubeletVersion).
//  3. Give the same registry to every block's Config.Registerer.
//
// In code:
//
//	reg := prometheus.NewRegistry()
//	if err := basemetrics.Register(basemetrics.Config{Registerer: reg,
//		NodeName: "node-1", Version: "v1.36.3"}); err != nil {
//		return err
//	}
//
// # Differences from upstream
//
//   - Build information comes from Config.Version and the Go toolchain's
//     build information (VCS revision, time and modification flag), not
//     from linker flags; absent fields take component-base's defaults.
//   - component-base's registry meta-metrics (registered_metrics_total,
//     disabled_metrics_total, hidden_metrics_total) are not served: the
//     registry is a plain Prometheus one.
//   - Register is a function rather than New: it holds nothing.
package basemetrics
