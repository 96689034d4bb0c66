// Package kubeletapi serves the kubelet's HTTPS API (port 10250): the
// endpoints behind kubectl logs, exec, attach and port-forward, and the
// node's pods, stats, metrics and health, with the kubelet's
// authentication and authorization. Any agent can serve it in front of its
// own backend: a CRI runtime (package kubeletapi/cri) or an in-process
// provider (NewInlineStreamer).
//
// # Model
//
// A Server routes requests to small interfaces the host passes in Config:
//
//	/containerLogs/{ns}/{pod}/{container}        LogSource (follow, previous, tailLines,
//	                                             sinceSeconds, sinceTime, timestamps, limitBytes)
//	/exec, /attach /{ns}/{pod}[/{uid}]/{container}  Streamer (returns the handler of the upgrade:
//	/portForward/{ns}/{pod}[/{uid}]                a proxy to a CRI streaming URL, or in process)
//	/run/{ns}/{pod}[/{uid}]/{container}           Runner
//	/pods                                         PodLister
//	/runningpods/                                 RunningPodLister
//	/stats/summary, /metrics/resource             SummaryProvider
//	/metrics/cadvisor                             SummaryProvider, Config.Cadvisor (cgroup
//	                                             names, machine)
//	/metrics, /metrics/probes                     prometheus.Gatherer
//	/healthz, /healthz/{check}                    HealthCheck
//	/metrics/slis                                 the results of /healthz's checks (the
//	                                             Server's own registry; DELETE resets)
//	/configz                                      Config.Configz
//	/logs/, /logs/?query=<service or file>        Config.NodeLogDir; with NodeLogQuery a
//	                                             Journal (journalctl through a CommandRunner)
//
// Every request on the HTTPS port is authenticated (x509 client
// certificates against a client CA file, bearer tokens through
// TokenReview, anonymous only if enabled) and authorized as a verb on
// nodes/<name>/<subresource> (see Subresources: stats, metrics, log, pods,
// healthz, configz, with proxy for the rest and as the fallback of the
// fine-grained ones), through SubjectAccessReview or AlwaysAllow. The
// request authenticators are k8s.io/apiserver's (x509, bearer token,
// union, anonymous); the TokenReview and SubjectAccessReview clients are
// this package's, with the kubelet's caching (tokens 2m, allowed 5m,
// denied 30s), the apiserver's retry of a failed review and the injected
// Config.Clock. The apiserver's delegating factories do the same but link
// CEL, OpenAPI validation and egress selection, about half of an agent's
// executable, which no kubelet API request uses.
// A plain-HTTP listener serves /healthz only (127.0.0.1:10248), and an
// optional read-only listener serves healthz, pods, stats and metrics
// without authentication (the kubelet's deprecated --read-only-port).
//
// Status codes and messages are the kubelet's: 401 "Unauthorized", 403
// "Forbidden (user=…, verb=…, resource=nodes, subresource(s)=[…])", 404
// `pod "x" does not exist`, 400 for a malformed query, 422 for invalid log
// options, 400 with the reason when a container has no log, 400 and 406
// with the field errors of a malformed or invalid node log query.
//
// # Host duties
//
//  1. Provide a PodLister whose pods carry their latest status (logs use
//     the container IDs in it).
//
//  2. Provide what you can serve: LogSource, Streamer, Runner,
//     SummaryProvider, health checks, metrics gatherers. A nil one answers
//     501 on its endpoints. For a CRI runtime, package kubeletapi/cri
//     implements the first three. For containers that run in process
//     (goroutines, a virtual node's remote workloads), LogBuffer is the
//     LogSource: Start each run of a container and write its output to the
//     writers it returns, Close it when it exits, Remove the pod when it is
//     gone; it serves follow, previous, tail, since, limitBytes and
//     timestamps as the kubelet does, within a memory bound.
//
//  3. For /metrics/cadvisor, name the cgroups as your cgroup driver and
//     runtime do when they are not cgroupfs and containerd
//     (Config.Cadvisor: PodCgroup, ContainerCgroup, SystemCgroups) and
//     pass the machine's description (Cadvisor.Machine) for machine_*.
//     With a real runtime, set Cadvisor.CgroupRoot to the cgroup mount
//     (and ProcPath if procfs is not at /proc) for page cache, CFS
//     throttling, CPU modes, limits and packet counters; the process needs
//     read access to both.
//     For the node log query, set NodeLogDir ("/var/log") and NodeLogQuery;
//     journalctl is run from PATH unless Journal says otherwise.
//
//  4. Give the authentication and authorization clients (the node
//     identity's AuthenticationV1 and AuthorizationV1) or an Authenticator
//     and Authorizer of your own.
//
//  5. New, then Run(ctx) until the agent stops; report the port in the
//     Node's status.daemonEndpoints.kubeletEndpoint (pass a Listener to
//     know it before Run when the port is 0).
//
// In code:
//
//	srv, err := kubeletapi.New(kubeletapi.Config{
//		NodeName:    "node-1",
//		TLSCertFile: "/var/lib/kubelet/pki/kubelet.crt", TLSKeyFile: "/var/lib/kubelet/pki/kubelet.key",
//		Auth: kubeletapi.AuthConfig{
//			ClientCAFile:        "/etc/kubernetes/pki/ca.crt",
//			TokenReview:         cs.AuthenticationV1(),
//			SubjectAccessReview: cs.AuthorizationV1(),
//		},
//		Pods: podManager, Logs: criRuntime, Streaming: criRuntime, Runner: criRuntime,
//		Summary:    summaryProvider,
//		NodeLogDir: "/var/log", NodeLogQuery: true,
//	})
//	if err != nil {
//		return err
//	}
//	go srv.Run(ctx)
//
// # Metrics
//
// With Config.Registerer the Server records the kubelet's request
// families for the authenticated port (server_type="readwrite", also
// through Handler) and the read-only port ("readonly"):
// kubelet_http_requests_total, kubelet_http_inflight_requests and
// kubelet_http_requests_duration_seconds (default buckets, timed on
// Config.Clock from the request's arrival to its handler's return),
// labelled as the kubelet labels them: method (OPTIONS, GET, HEAD, POST,
// PUT, DELETE, TRACE, CONNECT, else "other"), path (the first path
// segment, "metrics/<x>" under /metrics/, "other" for one the kubelet's
// server of that type does not register), server_type and long_running
// (exec, attach, portForward, debug). The plain-HTTP /healthz listener is
// not counted, as the kubelet's is not.
// Registering them twice on one registry is an ErrInvalidConfig from New.
//
// /metrics/slis is served on both ports, from a registry each Server
// has of its own (not Config.Registerer), as the kubelet serves
// component-base's slis registry: kubernetes_healthcheck{name,type}
// (1 if the check passed when /healthz last ran it, else 0) and
// kubernetes_healthchecks_total{name,type,status} ("success", "error"),
// both [STABLE], recorded each time a /healthz of the Server (either
// port, and the plain healthz listener) runs its checks: type "healthz",
// name "ping" and the names of Config.HealthChecks; an excluded check
// and /healthz/<name> record nothing. With them
// process_start_time_seconds, read as component-base reads it (procfs;
// where it cannot be read, Config.Clock's time when New ran, and Run
// logs why). A DELETE of /metrics/slis (authorized as delete on
// nodes/metrics) clears the health check series and answers
// "metrics reset". Requests for it are counted with path="other", as the
// kubelet registers no bucket for it.
//
// # Differences from upstream (k8s.io/kubernetes/pkg/kubelet/server)
//
//   - No globals: metrics go to Config.Registerer, healthz is written here
//     (the staging healthz handler records into process-global metrics),
//     and no go-restful container.
//   - Shutdown closes upgraded (hijacked) connections and waits for every
//     handler: Run leaves no goroutine behind. Request contexts end with
//     Run's context, so follows and in-process sessions stop with it.
//   - WebSocket clients reach the runtime unchanged through the
//     upgrade-aware proxy; the kubelet's v5 WebSocket-to-SPDY translation
//     (ExtendWebSocketsToKubelet, beta and on by default in v1.36) is not
//     done here: the API server translates kubectl's WebSocket streams
//     itself. So kubelet_websocket_streaming_requests_total, which the
//     kubelet counts only on that translation, is not served.
//   - /portForward requests are long_running="true": the kubelet means
//     them to be (its exec, attach, portforward, debug), but its lookup
//     spells the path "portforward" and labels them "false".
//   - /metrics/slis: each Server records on a registry of its own, where
//     the kubelet's is process-global. The health checks are ping and the
//     host's (the agent's: syncloop, pleg); the kubelet has ping, log (its
//     global klog flushing, not done here) and syncloop, and its plain
//     healthz port runs ping alone, where this one runs every check, so
//     its polls are counted for each. A DELETE leaves
//     process_start_time_seconds in place: the kubelet's reset clears that
//     process-global gauge, from /metrics/probes too, until it restarts.
//     Methods other than GET, HEAD and DELETE are answered 405, as on the
//     other /metrics paths here (the kubelet serves the metrics to any).
//   - /checkpoint, /debug/pprof and /debug/flags/v are not served (404);
//     /runningpods/ only with Config.RunningPods.
//   - The webhook retries and decision caches of the staging
//     authenticators and authorizers run on real time.
//   - /metrics/resource serves the families, help text, labels and sample
//     timestamps of a v1.36 kubelet except scrape_error, which that kubelet
//     hides (ALPHA, deprecated in 1.29). Like the kubelet, it and
//     /stats/summary?only_cpu_and_memory=true read the cheaper
//     GetCPUAndMemoryStats of a provider that has it ([CPUAndMemoryProvider],
//     as stats.Provider); others are read with Get and trimmed.
//   - /metrics/cadvisor is served without cadvisor (no manager, no
//     housekeeping, nothing cached): each scrape reads the SummaryProvider
//     once and writes its figures in cadvisor's families, help text, types,
//     labels (container, id, image, name, namespace, pod, as the kubelet's
//     label func; cpu, device, interface, failure_type, scope) and sample
//     timestamps, for the root cgroup (id="/", the node's figures), the
//     system containers Cadvisor.SystemCgroups names, each pod's cgroup
//     (container="") and each container (image from its status, name its
//     runtime ID as containerd's first alias). Served:
//     container_cpu_usage_seconds_total{cpu="total"},
//     container_memory_usage_bytes, _working_set_bytes, _rss, _swap,
//     container_memory_failures_total (page faults; both scopes are the
//     same figure, as on cgroup v2), container_fs_usage_bytes,
//     _limit_bytes, _inodes_free, _inodes_total (the node's filesystem on
//     "/", each container's writable layer), container_network_receive_ and
//     _transmit_bytes_total and _errors_total, container_pressure_* (where
//     the provider reports PSI and, with Cadvisor.CgroupRoot, the host
//     keeps it: cpu.pressure at the cgroup root, cadvisor's check), container_start_time_seconds,
//     container_last_seen, container_health_state (-1: cadvisor reads no
//     health check from a CRI runtime), container_scrape_error, and with
//     Cadvisor.Machine machine_cpu_cores, _physical_cores, _sockets,
//     _books, _drawers, machine_memory_bytes, machine_swap_bytes,
//     machine_dimm_*, machine_nvm_* and machine_scrape_error, without
//     sample times: the kubelet stamps them with the time it read the
//     machine, at its start, which Prometheus drops as out of bounds once
//     its head block has moved past it.
//   - With Cadvisor.CgroupRoot, each scrape also reads the cgroup of every
//     entry that has an id (v1 controller directories cpu, cpuacct and
//     memory, or the unified hierarchy when the root has
//     cgroup.controllers) and, for the root (pid 1) and each pod (a
//     process of its cgroup or a child cgroup), the network namespace's
//     <ProcPath>/<pid>/net/dev, and serves cadvisor's
//     container_memory_cache and _mapped_file (v1 total_cache and
//     total_mapped_file under use_hierarchy, v2 file and file_mapped),
//     container_cpu_user_ and _system_seconds_total,
//     container_cpu_cfs_periods_total, _throttled_periods_total and
//     _throttled_seconds_total (only with a CFS quota, as cadvisor),
//     container_spec_cpu_period, _cpu_quota (with a quota), _cpu_shares
//     (v2: cpu.weight converted as cadvisor) and
//     container_spec_memory_limit_bytes (0 for no limit, above 2^62), and
//     container_network_receive_ and _transmit_packets_total and
//     _packets_dropped_total on the pod's (and root's) series, without
//     lo, veth*, docker* and nerdctl* as cadvisor. Figures are stamped
//     with the scrape's time, limits with none. A cgroup, file or
//     namespace that cannot be read leaves its families out of that entry
//     (logged at V(4)); the scrape never fails for it. The host runs with
//     read access to the cgroup mount and to /proc/<pid>/net of the pods'
//     processes (the host PID namespace).
//   - Not in /metrics/cadvisor, as the summary has no such figure (and
//     the cgroup reading above does not read it):
//     container_cpu_cfs_burst_*,
//     container_cpu_load_average_10s, container_cpu_load_d_average_10s,
//     container_tasks_state, container_memory_kernel_usage,
//     _failcnt, _max_usage_bytes,
//     _total_active_file_bytes, _total_inactive_file_bytes, the
//     filesystem I/O counters (container_fs_reads_*, _writes_*,
//     _sector_*, _io_*, container_blkio_device_usage_total),
//     container_processes, _file_descriptors, _sockets, _threads,
//     _threads_max, _ulimits_soft, container_oom_events_total,
//     container_spec_memory_swap_limit_bytes and
//     _reservation_limit_bytes, the other container_spec_* families, and
//     cadvisor_version_info. The kubelet's /kubepods/burstable and
//     /kubepods/besteffort entries and the pods' sandbox (pause)
//     containers are not listed: a pod's network is on its cgroup's
//     series (a containerd node's kubelet has it on the sandbox
//     container's, with container="" too; CRI-O's with container="POD").
//     Containers have filesystem series as under CRI-O (a containerd
//     node's kubelet has none), and device is "" as the summary names no
//     devices. Series come in entry order, not sorted.
//   - The node log query (/logs/?query=) is on with Config.NodeLogQuery
//     (the kubelet's enableSystemLogQuery; its NodeLogQuery gate is GA and
//     locked on in v1.36) and follows the kubelet's parsing, validation,
//     messages and journalctl arguments. Differences: a file query with a
//     leading slash (?query=/kubelet.log, the documented form) is looked up
//     under NodeLogDir, where v1.36.3 refuses it with 406 "path escapes
//     from parent" (os.Root rejects absolute paths); the journal's units
//     are listed once per request (upstream once per service); the 30s
//     limit (NodeLogQueryTimeout) runs on Config.Clock and the request's
//     context ends the query too, so journalctl stops when the client goes
//     away (upstream's runs on context.Background). Without journalctl (or
//     a unit it does not know) a service's log is looked for as upstream
//     does, <NodeLogDir>/<service>, <service>.log, then
//     <service>/<service>.log, and a missing one is answered 200 "log not
//     found for <service>": there is no 501. Linux only: no Windows
//     Get-WinEvent.
package kubeletapi
