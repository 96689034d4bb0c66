// Package podstartup measures the pod startup latency SLI as the kubelet
// does (kubelet_pod_start_sli_duration_seconds): the time from a pod's
// creation to the moment its node, watching the API, sees it with every
// container started — minus the time spent pulling its images and running
// its init containers, so that the figure tells what the node and its
// runtime cost, not what the workload asked for.
//
// # Model
//
// A Tracker holds a small record per pod, fed by four parts of an agent:
//
//   - the pod source, on every pod it receives from the API (ObservedOnWatch):
//     a pod first seen without a start time is tracked (a pod the scheduler
//     marked unschedulable never is); once its status was written with every
//     container running, the first observation that shows it records the
//     metrics;
//   - the status writer, after each status write the API accepted
//     (StatusWritten): the first one with every container running marks the
//     pod started;
//   - the image puller (ImagePullStarted, ImagePullFinished): overlapping
//     pulls count once;
//   - the pod syncer (InitContainerStarted, InitContainerFinished): the time
//     regular init containers ran.
//
// Forget drops a pod's record (the pod is gone). A record is also dropped
// once its metrics are recorded, or when the pod is seen terminal.
//
// Metrics, under the kubelet's names and buckets (Config.Registerer):
// kubelet_pod_start_sli_duration_seconds and
// kubelet_pod_start_total_duration_seconds (histograms; the SLI leaves out
// stateful pods: a volume other than secret, configMap, downwardAPI,
// emptyDir or projected) and kubelet_first_network_pod_start_sli_duration_seconds
// (a gauge: the first pod not on the host network).
//
// # Differences from upstream
//
//   - Time comes from Config.Clock (ObservedOnWatch reads it too).
//   - An init container's exit reported after the next one started is
//     ignored; upstream's tracker clears the next one's start on it and so
//     leaves out of its sum every init container but the last when a pod
//     has several.
//   - The record of a pod whose metrics were recorded is dropped at once
//     rather than when the pod is deleted; a later observation does not
//     track it again, since it has a start time by then.
//
// It imports no other block; every method is safe for concurrent use.
package podstartup
