// Package cri serves the kubelet API's logs, exec, attach, port-forward
// and run from a CRI runtime, and lists what it runs: kubeletapi's
// LogSource, Streamer, Runner and RunningPodLister over a k8s.io/cri-api
// RuntimeService.
//
// # Model
//
// Containers are found the way the kubelet labels them
// (io.kubernetes.pod.uid, io.kubernetes.container.name on containers,
// io.kubernetes.pod.uid on sandboxes), so any agent that creates CRI
// objects with the kubelet's labels can use it. Logs follow the pod
// status's container IDs (current, or lastState for previous) with the
// kubelet's messages for containers without a log, and are read from the
// runtime's log path with k8s.io/cri-client/pkg/logs (CRI format,
// rotation-aware follow). Exec, attach and port-forward ask the runtime
// for a streaming URL and proxy the upgraded connection to it.
//
// # Host duties
//
//  1. Create containers with the kubelet's labels and a LogPath (the
//     kubelet's is <podLogsDir>/<ns>_<name>_<uid>/<container>/<n>.log).
//  2. Pass pods with their latest status to kubeletapi (Config.Pods), so
//     that logs find the current and previous container IDs.
//  3. Build one Runtime with New and set it as kubeletapi's Logs,
//     Streaming, Runner and RunningPods.
//
// # Differences from upstream
//
//   - The follow of a log polls the container's state on the staging log
//     reader's own timer (real time), as the kubelet does; it is not driven
//     by an injected clock.
//   - Exec finds its container through the runtime (a labelled, running
//     container), not through the kubelet's runtime pod cache.
package cri

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-client/pkg/logs"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/kubeletapi"
)

// ErrInvalidConfig wraps every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("kubeletapi/cri: invalid config")

// Labels the kubelet puts on CRI objects.
const (
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelContainerName = "io.kubernetes.container.name"
)

// Config configures a Runtime.
type Config struct {
	// Runtime is the CRI runtime service. Required.
	Runtime criapi.RuntimeService
	// RunTimeout bounds /run (ExecSync). Default 0: no timeout beyond the
	// request's.
	RunTimeout time.Duration
	// Clock provides "now" for sinceSeconds. Default the real clock.
	Clock clock.PassiveClock
}

// Runtime implements kubeletapi.LogSource, Streamer and Runner over CRI.
type Runtime struct {
	rt    criapi.RuntimeService
	cfg   Config
	clock clock.PassiveClock
}

var (
	_ kubeletapi.LogSource        = (*Runtime)(nil)
	_ kubeletapi.Streamer         = (*Runtime)(nil)
	_ kubeletapi.Runner           = (*Runtime)(nil)
	_ kubeletapi.RunningPodLister = (*Runtime)(nil)
)

// New returns a Runtime for cfg.
func New(cfg Config) (*Runtime, error) {
	if cfg.Runtime == nil {
		return nil, fmt.Errorf("%w: Runtime is required", ErrInvalidConfig)
	}
	if cfg.RunTimeout < 0 {
		return nil, fmt.Errorf("%w: RunTimeout %v must not be negative", ErrInvalidConfig, cfg.RunTimeout)
	}
	c := cfg.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	return &Runtime{rt: cfg.Runtime, cfg: cfg, clock: c}, nil
}

// ContainerLogs implements kubeletapi.LogSource.
func (r *Runtime) ContainerLogs(ctx context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions, stdout, stderr io.Writer) error {
	id, err := ContainerIDForLogs(pod, container, opts.Previous)
	if err != nil {
		return err
	}
	resp, err := r.rt.ContainerStatus(ctx, id, false)
	if err != nil {
		return fmt.Errorf("failed to get container status %q: %w", id, err)
	}
	path := resp.GetStatus().GetLogPath()
	if path == "" {
		return fmt.Errorf("container %q in pod %q has no log path", container, pod.Name)
	}
	// An empty write sends the headers before a follow blocks (to stderr
	// when only stderr was asked for).
	for _, w := range []io.Writer{stdout, stderr} {
		if w != nil {
			_, _ = w.Write(nil)
			break
		}
	}
	return logs.ReadLogs(ctx, path, id, LogOptions(opts, r.clock.Now()), r.rt, stdout, stderr)
}

// LogOptions converts API log options to the CRI log reader's, with
// sinceSeconds counted back from now.
func LogOptions(o *v1.PodLogOptions, now time.Time) *logs.LogOptions {
	out := &logs.LogOptions{TailLines: o.TailLines, LimitBytes: o.LimitBytes, Follow: o.Follow, Timestamp: o.Timestamps}
	switch {
	case o.SinceSeconds != nil:
		out.Since = now.Add(-time.Duration(*o.SinceSeconds) * time.Second)
	case o.SinceTime != nil:
		out.Since = o.SinceTime.Time
	}
	return out
}

// ContainerIDForLogs picks the CRI container ID whose log answers a request
// for the named container, from the pod's status, with the kubelet's
// errors for containers that have none.
func ContainerIDForLogs(pod *v1.Pod, container string, previous bool) (string, error) {
	st, ok := findStatus(pod, container)
	if !ok {
		return "", fmt.Errorf("container %q in pod %q is not available", container, pod.Name)
	}
	last := st.LastTerminationState.Terminated
	var id string
	switch {
	case previous:
		if last == nil || last.ContainerID == "" {
			return "", fmt.Errorf("previous terminated container %q in pod %q not found", container, pod.Name)
		}
		id = last.ContainerID
	case st.State.Running != nil:
		id = st.ContainerID
	case st.State.Terminated != nil:
		id = st.State.Terminated.ContainerID
		if id == "" && last != nil {
			id = last.ContainerID
		}
		if id == "" {
			return "", fmt.Errorf("container %q in pod %q is terminated", container, pod.Name)
		}
	case last != nil:
		if last.ContainerID == "" {
			return "", fmt.Errorf("container %q in pod %q is terminated", container, pod.Name)
		}
		id = last.ContainerID
	case st.State.Waiting != nil:
		switch reason := st.State.Waiting.Reason; reason {
		case "ErrImagePull":
			return "", fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", container, pod.Name)
		case "ImagePullBackOff":
			return "", fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", container, pod.Name)
		default:
			return "", fmt.Errorf("container %q in pod %q is waiting to start: %v", container, pod.Name, reason)
		}
	default:
		return "", fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", container, pod.Name)
	}
	return trimScheme(id), nil
}

func findStatus(pod *v1.Pod, name string) (*v1.ContainerStatus, bool) {
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i], true
			}
		}
	}
	return nil, false
}

// trimScheme turns "<runtime>://<id>" into the bare CRI ID.
func trimScheme(id string) string {
	if i := strings.Index(id, "://"); i >= 0 {
		return id[i+3:]
	}
	return id
}

// GetRunningPods implements kubeletapi.RunningPodLister: the pods with a
// ready sandbox or a running container, by the kubelet's labels, each with
// its running containers' names and images, ordered by namespace and name.
func (r *Runtime) GetRunningPods(ctx context.Context) ([]*v1.Pod, error) {
	sandboxes, err := r.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}})
	if err != nil {
		return nil, fmt.Errorf("list pod sandboxes: %w", err)
	}
	containers, err := r.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	byUID := map[string]*v1.Pod{}
	pod := func(labels map[string]string) *v1.Pod {
		uid := labels[LabelPodUID]
		if uid == "" {
			return nil // not the kubelet's
		}
		p := byUID[uid]
		if p == nil {
			p = &v1.Pod{}
			p.UID, p.Name, p.Namespace = types.UID(uid), labels[LabelPodName], labels[LabelPodNamespace]
			byUID[uid] = p
		}
		return p
	}
	for _, sb := range sandboxes {
		pod(sb.Labels)
	}
	for _, c := range containers {
		if p := pod(c.Labels); p != nil {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c.Labels[LabelContainerName], Image: c.GetImage().GetImage()})
		}
	}
	out := make([]*v1.Pod, 0, len(byUID))
	for _, p := range byUID {
		slices.SortFunc(p.Spec.Containers, func(a, b v1.Container) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *v1.Pod) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name), strings.Compare(string(a.UID), string(b.UID)))
	})
	return out, nil
}

// runningContainer returns the newest running instance of the pod's named
// container.
func (r *Runtime) runningContainer(ctx context.Context, pod *v1.Pod, name string) (string, error) {
	cs, err := r.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{LabelPodUID: string(pod.UID), LabelContainerName: name},
	})
	if err != nil {
		return "", fmt.Errorf("list containers: %w", err)
	}
	if len(cs) == 0 {
		return "", kubeletapi.NotFound("container not found (%q)", name)
	}
	newest := slices.MaxFunc(cs, func(a, b *runtimeapi.Container) int {
		if a.GetMetadata().GetAttempt() != b.GetMetadata().GetAttempt() {
			return int(a.GetMetadata().GetAttempt()) - int(b.GetMetadata().GetAttempt())
		}
		return int(a.CreatedAt - b.CreatedAt)
	})
	return newest.Id, nil
}

// Exec implements kubeletapi.Streamer.
func (r *Runtime) Exec(ctx context.Context, pod *v1.Pod, container string, cmd []string, opts kubeletapi.StreamOptions) (http.Handler, error) {
	id, err := r.runningContainer(ctx, pod, container)
	if err != nil {
		return nil, err
	}
	resp, err := r.rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: cmd, Tty: opts.TTY,
		Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr})
	if err != nil {
		return nil, err
	}
	return proxyTo(resp.Url)
}

// Attach implements kubeletapi.Streamer.
func (r *Runtime) Attach(ctx context.Context, pod *v1.Pod, container string, opts kubeletapi.StreamOptions) (http.Handler, error) {
	id, err := r.runningContainer(ctx, pod, container)
	if err != nil {
		return nil, err
	}
	resp, err := r.rt.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id, Tty: opts.TTY,
		Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr})
	if err != nil {
		return nil, err
	}
	return proxyTo(resp.Url)
}

// PortForward implements kubeletapi.Streamer: it forwards into the pod's
// ready sandbox.
func (r *Runtime) PortForward(ctx context.Context, pod *v1.Pod, ports []int32) (http.Handler, error) {
	sbs, err := r.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{LabelPodUID: string(pod.UID)},
	})
	if err != nil {
		return nil, fmt.Errorf("list pod sandboxes: %w", err)
	}
	if len(sbs) == 0 {
		return nil, kubeletapi.NotFound("pod not found (%q)", pod.Namespace+"/"+pod.Name)
	}
	newest := slices.MaxFunc(sbs, func(a, b *runtimeapi.PodSandbox) int { return int(a.CreatedAt - b.CreatedAt) })
	resp, err := r.rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: newest.Id, Port: ports})
	if err != nil {
		return nil, err
	}
	return proxyTo(resp.Url)
}

func proxyTo(raw string) (http.Handler, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("runtime returned a bad streaming URL %q: %w", raw, err)
	}
	return kubeletapi.ProxyStream(u), nil
}

// RunInContainer implements kubeletapi.Runner with ExecSync; the output is
// stdout followed by stderr, as the kubelet's.
func (r *Runtime) RunInContainer(ctx context.Context, pod *v1.Pod, container string, cmd []string) ([]byte, error) {
	id, err := r.runningContainer(ctx, pod, container)
	if err != nil {
		return nil, err
	}
	stdout, stderr, err := r.rt.ExecSync(ctx, id, cmd, r.cfg.RunTimeout)
	return append(stdout, stderr...), err
}
