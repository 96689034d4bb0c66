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
//	/metrics, /metrics/probes                     prometheus.Gatherer
//	/healthz, /healthz/{check}                    HealthCheck
//	/configz, /logs/                              Config.Configz, Config.NodeLogDir
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
// options, 400 with the reason when a container has no log.
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
//  3. Give the authentication and authorization clients (the node
//     identity's AuthenticationV1 and AuthorizationV1) or an Authenticator
//     and Authorizer of your own.
//
//  4. New, then Run(ctx) until the agent stops; report the port in the
//     Node's status.daemonEndpoints.kubeletEndpoint (pass a Listener to
//     know it before Run when the port is 0).
//
//     srv, err := kubeletapi.New(kubeletapi.Config{
//     NodeName: "node-1",
//     TLSCertFile: "/var/lib/kubelet/pki/kubelet.crt", TLSKeyFile: "/var/lib/kubelet/pki/kubelet.key",
//     Auth: kubeletapi.AuthConfig{
//     ClientCAFile:        "/etc/kubernetes/pki/ca.crt",
//     TokenReview:         cs.AuthenticationV1(),
//     SubjectAccessReview: cs.AuthorizationV1(),
//     },
//     Pods: podManager, Logs: criRuntime, Streaming: criRuntime, Runner: criRuntime,
//     Summary: summaryProvider,
//     })
//     if err != nil {
//     return err
//     }
//     go srv.Run(ctx)
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
//     upgrade-aware proxy; the kubelet's optional v5 WebSocket-to-SPDY
//     translation (ExtendWebSocketsToKubelet, alpha) is not done here: the
//     API server translates kubectl's WebSocket streams itself.
//   - /metrics/cadvisor, /checkpoint, /debug/pprof, /debug/flags/v and
//     the system log query are not served (404); /runningpods/ only with
//     Config.RunningPods.
//   - The webhook retries and decision caches of the staging
//     authenticators and authorizers run on real time.
//   - /metrics/resource serves the families, help text, labels and sample
//     timestamps of a v1.36 kubelet except scrape_error, which that kubelet
//     hides (ALPHA, deprecated in 1.29). Like the kubelet, it and
//     /stats/summary?only_cpu_and_memory=true read the cheaper
//     GetCPUAndMemoryStats of a provider that has it ([CPUAndMemoryProvider],
//     as stats.Provider); others are read with Get and trimmed.
package kubeletapi
