package kubeletapi

import (
	"context"
	"io"
	"net/http"

	v1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The interfaces below are what a host plugs in. Every method may be
// called concurrently from many requests; none may keep the request's
// writers after it returns.

// PodLister resolves the pods the node runs. It backs /pods and the name
// lookups of every per-pod endpoint.
type PodLister interface {
	// GetPodByName returns the pod with that namespace and name, with its
	// latest status, or false if the node does not run it.
	GetPodByName(namespace, name string) (*v1.Pod, bool)
	// GetPods returns every pod bound to the node (desired pods, as the
	// kubelet's /pods does).
	GetPods() []*v1.Pod
}

// RunningPodLister lists what the container runtime runs: the
// /runningpods/ endpoint, which differs from /pods (the desired pods).
type RunningPodLister interface {
	// GetRunningPods returns the pods that have a ready sandbox or a
	// running container, as the kubelet's: name, namespace, UID and each
	// running container's name and image; nothing else of spec or status.
	GetRunningPods(ctx context.Context) ([]*v1.Pod, error)
}

// LogSource streams a container's log (the /containerLogs endpoint).
type LogSource interface {
	// ContainerLogs writes the log of the named container of pod to stdout
	// and stderr as opts asks (follow, previous, tail, since, limit,
	// timestamps). A nil writer means that stream was not requested. With
	// opts.Follow it returns when the container stops or ctx is done. The
	// container is known to be in the pod's spec; an error that says why no
	// log is available (not started, no previous instance) is answered with
	// 400 and its message, as the kubelet does.
	ContainerLogs(ctx context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions, stdout, stderr io.Writer) error
}

// StreamOptions are the streams an exec or attach session asked for
// (the stdin, stdout, stderr and tty query parameters).
type StreamOptions = remotecommand.Options

// TerminalSize is a terminal resize event of a tty session.
type TerminalSize = remotecommand.TerminalSize

// Streamer opens the kubelet's streaming sessions: exec, attach and
// port-forward. Each method returns the handler that serves the upgraded
// connection (SPDY or WebSocket): for a CRI runtime an upgrade-aware proxy
// to the runtime's streaming URL (see ProxyStream and package
// kubeletapi/cri), for an in-process provider NewInlineStreamer. An error
// is answered before the upgrade (a *StatusError keeps its code; others are
// 500, as upstream).
type Streamer interface {
	Exec(ctx context.Context, pod *v1.Pod, container string, cmd []string, opts StreamOptions) (http.Handler, error)
	Attach(ctx context.Context, pod *v1.Pod, container string, opts StreamOptions) (http.Handler, error)
	PortForward(ctx context.Context, pod *v1.Pod, ports []int32) (http.Handler, error)
}

// Runner runs a command in a container and returns its combined output
// (the /run endpoint; CRI ExecSync fits).
type Runner interface {
	RunInContainer(ctx context.Context, pod *v1.Pod, container string, cmd []string) ([]byte, error)
}

// SummaryProvider returns the node's stats summary (/stats/summary and
// /metrics/resource). Its method set is eviction.SummaryProvider's, so one
// provider can feed both.
type SummaryProvider interface {
	Get(ctx context.Context) (*statsapi.Summary, error)
}

// SummaryProviderFunc adapts a function to SummaryProvider.
type SummaryProviderFunc func(ctx context.Context) (*statsapi.Summary, error)

// Get calls f.
func (f SummaryProviderFunc) Get(ctx context.Context) (*statsapi.Summary, error) { return f(ctx) }

// HealthCheck is one named /healthz check (as /healthz/<name>).
type HealthCheck struct {
	// Name is the check's path segment, e.g. "syncloop" or "pleg".
	Name string
	// Check returns nil when healthy. It must not block for long.
	Check func() error
}
