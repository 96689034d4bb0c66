package virtualnode

import (
	"context"
	"io"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit/nodekit/kubeletapi"
)

// Provider runs the pods bound to the virtual nodes: a simulator, a cloud
// container service, a remote cluster. The agent calls it from podworkers'
// goroutines, concurrently for different pods but never concurrently for one
// pod UID. Methods must not modify the pods they are given.
type Provider interface {
	// CreatePod makes the pod's containers run. It is called on every sync
	// of a running pod and must be idempotent; it should return promptly and
	// let the containers start in the background.
	CreatePod(ctx context.Context, pod *v1.Pod) error
	// DeletePod stops the pod's containers, giving them at most gracePeriod
	// (it may be called again with a shorter one, after ctx of the previous
	// call was cancelled). It blocks until no container runs, or returns
	// ctx's error. Stopping a pod that does not run is not an error.
	DeletePod(ctx context.Context, pod *v1.Pod, gracePeriod time.Duration) error
	// PodStatus returns the pod status as the provider sees it (phase,
	// conditions, container statuses, pod IPs), or nil if the provider has
	// no record of the pod. The agent adds hostIP and qosClass. Times
	// should be whole seconds (the API drops fractions) and stable across
	// calls, so that an unchanged pod compares equal and is not patched.
	PodStatus(ctx context.Context, pod *v1.Pod) (*v1.PodStatus, error)
	// ForgetPod releases what the provider remembers of a finished pod.
	ForgetPod(uid types.UID)
	// Healthy returns nil while the provider can run pods; an error turns
	// every virtual node NotReady at the next status computation, with the
	// error in the Ready condition's message. It must not block and must be
	// safe for concurrent use.
	Healthy() error
}

// PodNotifier is implemented by providers whose pods change on their own
// (a container became ready, exited). The agent calls NotifyPods once, before
// it starts; the provider then calls notify with the UID of a pod whose status
// changed, from any goroutine. notify never blocks. Without it, pod statuses
// are only refreshed at each resync (podworkers' ResyncInterval).
type PodNotifier interface {
	NotifyPods(notify func(uid types.UID))
}

// LogProvider is implemented by providers that keep their containers' logs:
// the agent's kubelet API (Config.API) serves them to kubectl logs. Without
// it /containerLogs answers 501.
type LogProvider interface {
	// ContainerLogs writes the log of the named container of pod as opts
	// asks (previous, follow, tailLines, sinceSeconds, sinceTime,
	// limitBytes, timestamps) to stdout and stderr; a nil writer was not
	// requested. With opts.Follow it returns when the container stops or
	// ctx is done. An error says why there is no log (not started, no
	// previous instance); it is answered 400 with its message, as the
	// kubelet does. The pod is one of the agent's, with its latest status,
	// and the container is in its spec.
	ContainerLogs(ctx context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions, stdout, stderr io.Writer) error
}

// ExecProvider is implemented by providers that run kubectl exec, attach
// and port-forward sessions in process; the agent's kubelet API serves them
// through kubeletapi.NewInlineStreamer. Without it those endpoints answer
// 501. Exec's error is the command's exit: a k8s.io/utils/exec.ExitError
// (such as CodeExitError, returned as is, not wrapped) reports its exit code
// to the client; any other error is reported as a failure to run the
// command. Methods block until the session ends and must return when ctx is
// done.
type ExecProvider interface {
	kubeletapi.ContainerRuntime
}

// StatsProvider is implemented by providers that measure their pods. With
// Config.API set, the agent then serves each node's stats summary at
// /stats/nodes/<node>/summary and its resource metrics at
// /metrics/nodes/<node>/metrics/resource, and every node names the latter
// in its metrics.k8s.io/resource-metrics-path annotation, which
// metrics-server (v0.7 and later) scrapes instead of /metrics/resource:
// kubectl top and HorizontalPodAutoscalers then work on virtual nodes. The
// nodes' addresses (Config.NodeIP) must reach the API's port for that.
type StatsProvider interface {
	// PodStats returns the usage of a running pod: CPU (UsageNanoCores and
	// the cumulative UsageCoreNanoSeconds) and memory (WorkingSetBytes),
	// the pod's and each container's, with their times and start times;
	// nil if the provider has none. The agent fills PodRef and sums the
	// pods of a node into its node stats.
	PodStats(ctx context.Context, pod *v1.Pod) (*statsapi.PodStats, error)
}
