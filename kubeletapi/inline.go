package kubeletapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// ContainerRuntime runs streaming sessions in process: what a
// virtual-kubelet-style provider implements to serve kubectl exec, attach
// and port-forward without a CRI streaming server. Methods are called from
// the session's goroutine and may block until the session ends; they must
// return when ctx is done. A nil stdin, stdout or stderr means that stream
// was not requested. resize is nil unless tty. For the client to see a
// command's exit code, Exec returns a k8s.io/utils/exec.ExitError (such as
// exec.CodeExitError) itself, not wrapped: the staging server does not
// unwrap it.
type ContainerRuntime interface {
	Exec(ctx context.Context, pod *v1.Pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan TerminalSize) error
	Attach(ctx context.Context, pod *v1.Pod, container string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan TerminalSize) error
	PortForward(ctx context.Context, pod *v1.Pod, port int32, stream io.ReadWriteCloser) error
}

// NewInlineStreamer returns a Streamer that serves each session in process
// over rt with the staging streaming protocols (SPDY and WebSocket channels
// v1-v4, as a CRI runtime's streaming server does). Zero timeouts mean
// DefaultStreamIdleTimeout and DefaultStreamCreationTimeout.
func NewInlineStreamer(rt ContainerRuntime, idleTimeout, creationTimeout time.Duration) (Streamer, error) {
	if rt == nil {
		return nil, errors.New("kubeletapi: NewInlineStreamer needs a ContainerRuntime")
	}
	setDefault(&idleTimeout, DefaultStreamIdleTimeout)
	setDefault(&creationTimeout, DefaultStreamCreationTimeout)
	return &inlineStreamer{rt: rt, idle: idleTimeout, creation: creationTimeout}, nil
}

type inlineStreamer struct {
	rt             ContainerRuntime
	idle, creation time.Duration
}

func (s *inlineStreamer) Exec(_ context.Context, pod *v1.Pod, container string, cmd []string, opts StreamOptions) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		remotecommand.ServeExec(w, r, podExecutor{s.rt, pod}, pod.Name, string(pod.UID), container, cmd, &opts,
			s.idle, s.creation, remotecommand.SupportedStreamingProtocols)
	}), nil
}

func (s *inlineStreamer) Attach(_ context.Context, pod *v1.Pod, container string, opts StreamOptions) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		remotecommand.ServeAttach(w, r, podExecutor{s.rt, pod}, pod.Name, string(pod.UID), container, &opts,
			s.idle, s.creation, remotecommand.SupportedStreamingProtocols)
	}), nil
}

func (s *inlineStreamer) PortForward(_ context.Context, pod *v1.Pod, ports []int32) (http.Handler, error) {
	opts := &portforward.V4Options{Ports: ports}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		portforward.ServePortForward(w, r, podExecutor{s.rt, pod}, pod.Name, string(pod.UID), opts,
			s.idle, s.creation, portforward.SupportedProtocols)
	}), nil
}

// podExecutor adapts a ContainerRuntime to the staging server's
// name-and-UID callbacks for one pod.
type podExecutor struct {
	rt  ContainerRuntime
	pod *v1.Pod
}

func (e podExecutor) ExecInContainer(ctx context.Context, _, _, container string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	return e.rt.Exec(ctx, e.pod, container, cmd, in, out, errw, tty, resize)
}

func (e podExecutor) AttachContainer(ctx context.Context, _, _, container string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	return e.rt.Attach(ctx, e.pod, container, in, out, errw, tty, resize)
}

func (e podExecutor) PortForward(ctx context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	return e.rt.PortForward(ctx, e.pod, port, stream)
}
