package kubeletapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	clientexec "k8s.io/client-go/util/exec"
	utilexec "k8s.io/utils/exec"

	"github.com/nodekit/nodekit/kubeletapi"
)

// verifyNoSPDYLeaks is goleak.VerifyNone with a longer window: the
// connection shutdown goroutine of spdystream waits 1s to hand a close
// error (the peer closed first) to nobody, and a session's server side may
// close its connection after the test server has stopped.
func verifyNoSPDYLeaks(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if goleak.Find() == nil { // retries for about half a second
			return
		}
	}
	goleak.VerifyNone(t)
}

// fakeRuntime is a ContainerRuntime whose sessions run the functions set.
type fakeRuntime struct {
	mu    sync.Mutex
	calls []string
	exec  func(ctx context.Context, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan kubeletapi.TerminalSize) error
}

func (r *fakeRuntime) record(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
}

func (r *fakeRuntime) recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func (r *fakeRuntime) Exec(ctx context.Context, pod *v1.Pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan kubeletapi.TerminalSize) error {
	r.record("exec %s/%s %s %q", pod.Name, pod.UID, container, cmd)
	return r.exec(ctx, cmd, stdin, stdout, stderr, tty, resize)
}

func (r *fakeRuntime) Attach(_ context.Context, pod *v1.Pod, container string, _ io.Reader, stdout, _ io.WriteCloser, _ bool, _ <-chan kubeletapi.TerminalSize) error {
	r.record("attach %s/%s %s", pod.Name, pod.UID, container)
	_, err := io.WriteString(stdout, "attached to "+container)
	return err
}

func (r *fakeRuntime) PortForward(_ context.Context, pod *v1.Pod, port int32, stream io.ReadWriteCloser) error {
	r.record("portforward %s/%s %d", pod.Name, pod.UID, port)
	defer stream.Close()
	b := make([]byte, 4)
	if _, err := io.ReadFull(stream, b); err != nil {
		return err
	}
	_, err := fmt.Fprintf(stream, "%s from %d", b, port)
	return err
}

// inlineServer serves the API over a NewInlineStreamer of rt with TLS.
func inlineServer(t *testing.T, rt kubeletapi.ContainerRuntime) (*httptest.Server, *rest.Config) {
	t.Helper()
	streamer, err := kubeletapi.NewInlineStreamer(rt, 0, 0)
	require.NoError(t, err)
	srv, _ := newServer(t, func(c *kubeletapi.Config) { c.Streaming = streamer })
	ts := httptest.NewTLSServer(srv.Handler())
	return ts, &rest.Config{Host: ts.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
}

// stream runs an exec or attach session at path with opts.
func stream(t *testing.T, cfg *rest.Config, path string, opts remotecommand.StreamOptions) error {
	t.Helper()
	u, err := url.Parse(cfg.Host + path)
	require.NoError(t, err)
	exec, err := remotecommand.NewSPDYExecutor(cfg, http.MethodPost, u)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return exec.StreamWithContext(ctx, opts)
}

func TestInlineExec(t *testing.T) {
	defer verifyNoSPDYLeaks(t)
	rt := &fakeRuntime{exec: func(_ context.Context, cmd []string, _ io.Reader, stdout, _ io.WriteCloser, _ bool, _ <-chan kubeletapi.TerminalSize) error {
		_, err := io.WriteString(stdout, "hello")
		return err
	}}
	ts, cfg := inlineServer(t, rt)
	defer ts.Close()

	var stdout, stderr bytes.Buffer
	err := stream(t, cfg, "/exec/ns/p/c?command=echo&command=hello&output=1&error=1", remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	require.NoError(t, err)
	require.Equal(t, "hello", stdout.String())
	require.Empty(t, stderr.String())
	require.Equal(t, []string{`exec p/uid-1 c ["echo" "hello"]`}, rt.recorded())
}

func TestInlineExecExitCode(t *testing.T) {
	defer verifyNoSPDYLeaks(t)
	rt := &fakeRuntime{exec: func(_ context.Context, _ []string, _ io.Reader, stdout, stderr io.WriteCloser, _ bool, _ <-chan kubeletapi.TerminalSize) error {
		_, _ = io.WriteString(stdout, "partial")
		_, _ = io.WriteString(stderr, "oops")
		return utilexec.CodeExitError{Err: errors.New("exit status 3"), Code: 3}
	}}
	ts, cfg := inlineServer(t, rt)
	defer ts.Close()

	var stdout, stderr bytes.Buffer
	err := stream(t, cfg, "/exec/ns/p/uid-1/c?command=false&output=1&error=1", remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	var exitErr clientexec.ExitError
	require.ErrorAs(t, err, &exitErr)
	require.True(t, exitErr.Exited())
	require.Equal(t, 3, exitErr.ExitStatus())
	require.Equal(t, "partial", stdout.String())
	require.Equal(t, "oops", stderr.String())
}

func TestInlineExecError(t *testing.T) {
	defer verifyNoSPDYLeaks(t)
	rt := &fakeRuntime{exec: func(context.Context, []string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan kubeletapi.TerminalSize) error {
		return errors.New("no such container")
	}}
	ts, cfg := inlineServer(t, rt)
	defer ts.Close()

	err := stream(t, cfg, "/exec/ns/p/c?command=x&output=1", remotecommand.StreamOptions{Stdout: io.Discard})
	require.ErrorContains(t, err, "no such container")
	var exitErr clientexec.ExitError
	require.False(t, errors.As(err, &exitErr), "not an exit code")
}

func TestInlineExecStdin(t *testing.T) {
	defer verifyNoSPDYLeaks(t)
	rt := &fakeRuntime{exec: func(_ context.Context, _ []string, stdin io.Reader, stdout, _ io.WriteCloser, _ bool, _ <-chan kubeletapi.TerminalSize) error {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return err
		}
		_, err = io.WriteString(stdout, strings.ToUpper(string(b)))
		return err
	}}
	ts, cfg := inlineServer(t, rt)
	defer ts.Close()

	var stdout bytes.Buffer
	err := stream(t, cfg, "/exec/ns/p/c?command=tr&input=1&output=1", remotecommand.StreamOptions{Stdin: strings.NewReader("shout"), Stdout: &stdout})
	require.NoError(t, err)
	require.Equal(t, "SHOUT", stdout.String())
}

// oneSize is a TerminalSizeQueue with one size.
type oneSize struct{ sent bool }

func (q *oneSize) Next() *remotecommand.TerminalSize {
	if q.sent {
		return nil
	}
	q.sent = true
	return &remotecommand.TerminalSize{Width: 80, Height: 24}
}

func TestInlineExecTTYResize(t *testing.T) {
	defer verifyNoSPDYLeaks(t)
	rt := &fakeRuntime{exec: func(ctx context.Context, _ []string, _ io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan kubeletapi.TerminalSize) error {
		if !tty || resize == nil || stderr != nil {
			return fmt.Errorf("tty %v, resize %v, stderr %v", tty, resize != nil, stderr != nil)
		}
		select {
		case sz := <-resize:
			_, err := fmt.Fprintf(stdout, "%dx%d", sz.Width, sz.Height)
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	ts, cfg := inlineServer(t, rt)
	defer ts.Close()

	var stdout bytes.Buffer
	err := stream(t, cfg, "/exec/ns/p/c?command=sh&output=1&tty=1", remotecommand.StreamOptions{Stdout: &stdout, Tty: true, TerminalSizeQueue: &oneSize{}})
	require.NoError(t, err)
	require.Equal(t, "80x24", stdout.String())
}

func TestInlineAttach(t *testing.T) {
	defer verifyNoSPDYLeaks(t)
	rt := &fakeRuntime{}
	ts, cfg := inlineServer(t, rt)
	defer ts.Close()

	var stdout bytes.Buffer
	err := stream(t, cfg, "/attach/ns/p/c2?output=1", remotecommand.StreamOptions{Stdout: &stdout})
	require.NoError(t, err)
	require.Equal(t, "attached to c2", stdout.String())
	require.Equal(t, []string{"attach p/uid-1 c2"}, rt.recorded())
}

func TestInlinePortForward(t *testing.T) {
	defer verifyNoSPDYLeaks(t)
	rt := &fakeRuntime{}
	ts, cfg := inlineServer(t, rt)
	defer ts.Close()

	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	require.NoError(t, err)
	u, err := url.Parse(ts.URL + "/portForward/ns/p/uid-1")
	require.NoError(t, err)
	conn, protocol, err := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u).Dial("portforward.k8s.io")
	require.NoError(t, err)
	defer conn.Close()
	require.Equal(t, "portforward.k8s.io", protocol)

	headers := http.Header{}
	headers.Set(v1.StreamType, v1.StreamTypeError)
	headers.Set(v1.PortHeader, "8080")
	headers.Set(v1.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(headers)
	require.NoError(t, err)
	require.NoError(t, errStream.Close()) // the client only reads it
	headers.Set(v1.StreamType, v1.StreamTypeData)
	data, err := conn.CreateStream(headers)
	require.NoError(t, err)

	_, err = io.WriteString(data, "ping")
	require.NoError(t, err)
	got, err := io.ReadAll(data)
	require.NoError(t, err)
	require.Equal(t, "ping from 8080", string(got))
	msg, err := io.ReadAll(errStream)
	require.NoError(t, err)
	require.Empty(t, string(msg), "no forwarding error")
	require.Equal(t, []string{"portforward p/uid-1 8080"}, rt.recorded())
}
