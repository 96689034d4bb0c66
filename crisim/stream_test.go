package crisim

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	clocktesting "k8s.io/utils/clock/testing"
	utilexec "k8s.io/utils/exec"
)

// session runs a remote command (exec or attach) at rawURL with client-go's
// SPDY executor, as the kubelet's proxy and kubectl do. It may run in its
// own goroutine.
func session(rawURL string, opts remotecommand.StreamOptions) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	ex, err := remotecommand.NewSPDYExecutor(&rest.Config{Host: u.Scheme + "://" + u.Host}, "POST", u)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return ex.StreamWithContext(ctx, opts)
}

// execURL asks the runtime for the streaming URL of cmd in container id.
func (e *env) execURL(t *testing.T, id string, cmd []string, stdin, tty bool) string {
	t.Helper()
	req := &runtimeapi.ExecRequest{ContainerId: id, Cmd: cmd, Stdin: stdin, Stdout: true, Stderr: !tty, Tty: tty}
	resp, err := e.rt.Exec(context.Background(), req)
	require.NoError(t, err)
	return resp.Url
}

// execStream runs the exec session at rawURL.
func execStream(rawURL string, stdin io.Reader, tty bool) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	opts := remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Tty: tty}
	if !tty {
		opts.Stderr = &errOut
	}
	err = session(rawURL, opts)
	return out.String(), errOut.String(), err
}

func TestStreamingExec(t *testing.T) {
	e := newEnv(t)
	e.sim.ScriptExec(Match{Container: "app"}, []string{"ls"}, ExecResult{Stdout: "a\nb\n", Stderr: "warning\n"})
	e.sim.ScriptExec(Match{Container: "app"}, []string{"false"}, ExecResult{Stdout: "partial", Stderr: "failed\n", ExitCode: 3})
	e.sim.ScriptExec(Match{Container: "app"}, []string{"sh"}, ExecResult{EchoStdin: true, Stdout: "bye\n"})
	podID := e.runPod(t, "web")
	app := e.startContainer(t, podID, "app")

	cases := []struct {
		name               string
		cmd                []string
		stdin              string
		wantOut, wantErr   string
		wantCode           int
		withStdin, withTTY bool
	}{
		{name: "scripted", cmd: []string{"ls", "-l"}, wantOut: "a\nb\n", wantErr: "warning\n"},
		{name: "exit code", cmd: []string{"false"}, wantOut: "partial", wantErr: "failed\n", wantCode: 3},
		{name: "unscripted", cmd: []string{"date"}},
		{name: "cat echoes stdin", cmd: []string{"cat"}, stdin: "ping\npong\n", withStdin: true, wantOut: "ping\npong\n"},
		{name: "scripted echo", cmd: []string{"sh"}, stdin: "hi\n", withStdin: true, wantOut: "hi\nbye\n"},
		{name: "cat without stdin", cmd: []string{"cat"}},
		{name: "tty merges stderr", cmd: []string{"ls"}, withTTY: true, wantOut: "a\nb\nwarning\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdin io.Reader
			if tc.withStdin {
				stdin = strings.NewReader(tc.stdin)
			}
			stdout, stderr, err := execStream(e.execURL(t, app, tc.cmd, tc.withStdin, tc.withTTY), stdin, tc.withTTY)
			require.Equal(t, tc.wantOut, stdout)
			require.Equal(t, tc.wantErr, stderr)
			if tc.wantCode == 0 {
				require.NoError(t, err)
				return
			}
			var exitErr utilexec.ExitError
			require.ErrorAs(t, err, &exitErr)
			require.Equal(t, tc.wantCode, exitErr.ExitStatus())
		})
	}
}

func TestStreamingExecDelay(t *testing.T) {
	e := newEnv(t)
	e.sim.ScriptExec(Match{}, []string{"slow"}, ExecResult{Stdout: "done", Delay: time.Minute})
	podID := e.runPod(t, "web")
	id := e.startContainer(t, podID, "app")

	type result struct {
		stdout string
		err    error
	}
	u := e.execURL(t, id, []string{"slow"}, false, false)
	res := make(chan result, 1)
	go func() {
		stdout, _, err := execStream(u, nil, false)
		res <- result{stdout, err}
	}()
	e.waitWaiters(t, 1)
	e.clock.Step(time.Minute)
	r := <-res
	require.NoError(t, r.err)
	require.Equal(t, "done", r.stdout)
}

func TestStreamingRequestErrors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	podID := e.runPod(t, "web")
	created := e.createContainer(t, podID, "created")

	_, err := e.rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: "missing", Cmd: []string{"ls"}, Stdout: true})
	requireCode(t, codes.NotFound, err)
	_, err = e.rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: created, Cmd: []string{"ls"}, Stdout: true})
	requireCode(t, codes.FailedPrecondition, err)
	_, err = e.rt.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: created, Stdout: true})
	requireCode(t, codes.FailedPrecondition, err)
	_, err = e.rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: "missing"})
	requireCode(t, codes.NotFound, err)

	require.NoError(t, e.rt.StartContainer(ctx, created))
	_, err = e.rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: created, Stdout: true})
	requireCode(t, codes.InvalidArgument, err)
	_, err = e.rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: created, Cmd: []string{"ls"}})
	requireCode(t, codes.InvalidArgument, err) // no stream at all

	require.NoError(t, e.rt.StopPodSandbox(ctx, podID))
	_, err = e.rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: podID})
	requireCode(t, codes.FailedPrecondition, err)
}

// syncBuffer is a bytes.Buffer safe for a writer and a poller.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestStreamingAttach(t *testing.T) {
	e := newEnv(t)
	e.sim.ScriptLogLines(Match{Container: "app"}, LogLine{Text: "booted"}, LogLine{Text: "careful", Stderr: true})
	podID := e.runPod(t, "web")
	id := e.startContainer(t, podID, "app")

	resp, err := e.rt.Attach(context.Background(), &runtimeapi.AttachRequest{ContainerId: id, Stdout: true, Stderr: true})
	require.NoError(t, err)
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- session(resp.Url, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}) }()

	require.Eventually(t, func() bool { return stdout.String() == "booted\n" && stderr.String() == "careful\n" },
		5*time.Second, time.Millisecond, "the output so far is replayed")
	require.NoError(t, e.sim.AppendLog(id, LogLine{Text: "working"}))
	require.Eventually(t, func() bool { return stdout.String() == "booted\nworking\n" }, 5*time.Second, time.Millisecond,
		"new output is followed")
	select {
	case err := <-done:
		t.Fatalf("attach ended while the container runs: %v", err)
	default:
	}

	require.NoError(t, e.sim.ExitContainer(id, 0, ""))
	require.NoError(t, <-done, "the session ends with the container")
}

func TestStreamingAttachStdin(t *testing.T) {
	e := newEnv(t)
	podID := e.runPod(t, "web")
	id := e.startContainer(t, podID, "app")

	resp, err := e.rt.Attach(context.Background(), &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true})
	require.NoError(t, err)
	var stdout bytes.Buffer
	require.NoError(t, session(resp.Url, remotecommand.StreamOptions{Stdin: strings.NewReader("ignored"), Stdout: &stdout}),
		"the session ends when the client closes stdin")
	require.Empty(t, stdout.String())
	require.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, e.containerStatus(t, id).State)

	// With stdin left open, the session ends with the container.
	resp, err = e.rt.Attach(context.Background(), &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true})
	require.NoError(t, err)
	stdin, stdinW := io.Pipe()
	defer stdinW.Close()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- session(resp.Url, remotecommand.StreamOptions{Stdin: stdin, Stdout: &out}) }()
	_, err = io.WriteString(stdinW, "typed") // read (and discarded) by the session
	require.NoError(t, err)
	require.NoError(t, e.sim.AppendLog(id, LogLine{Text: "attached"}))
	require.Eventually(t, func() bool { return out.String() == "attached\n" }, 5*time.Second, time.Millisecond)
	require.NoError(t, e.sim.ExitContainer(id, 0, ""))
	require.NoError(t, <-done)
}

// echoServer accepts connections and echoes what it reads until EOF.
func echoServer(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				_, _ = io.Copy(conn, conn)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = lis.Close()
		wg.Wait()
	})
	return lis.Addr().String()
}

// portForwardProtocolV1 is client-go's portforward.PortForwardProtocolV1Name
// (that package pulls in a websocket dependency this module lacks).
const portForwardProtocolV1 = "portforward.k8s.io"

// openForward opens a port-forward connection at rawURL and the error and
// data streams of one forwarded connection to port.
func openForward(t *testing.T, rawURL string, port int) (conn interface {
	Close() error
	CloseChan() <-chan bool
}, data io.ReadWriter) {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	transport, upgrader, err := spdy.RoundTripperFor(&rest.Config{Host: u.Scheme + "://" + u.Host})
	require.NoError(t, err)
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u)
	c, _, err := dialer.Dial(portForwardProtocolV1)
	require.NoError(t, err)

	headers := http.Header{}
	headers.Set(v1.PortHeader, strconv.Itoa(port))
	headers.Set(v1.PortForwardRequestIDHeader, "0")
	headers.Set(v1.StreamType, v1.StreamTypeError)
	_, err = c.CreateStream(headers)
	require.NoError(t, err)
	headers.Set(v1.StreamType, v1.StreamTypeData)
	data, err = c.CreateStream(headers)
	require.NoError(t, err)
	return c, data
}

// forward opens a port-forward connection at rawURL, sends payload to port
// and returns what comes back on the data and error streams.
func forward(t *testing.T, rawURL string, port int, payload string) (data, errMsg string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	transport, upgrader, err := spdy.RoundTripperFor(&rest.Config{Host: u.Scheme + "://" + u.Host})
	require.NoError(t, err)
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u)
	conn, _, err := dialer.Dial(portForwardProtocolV1)
	require.NoError(t, err)
	defer conn.Close()

	headers := http.Header{}
	headers.Set(v1.PortHeader, strconv.Itoa(port))
	headers.Set(v1.PortForwardRequestIDHeader, "0")
	headers.Set(v1.StreamType, v1.StreamTypeError)
	errStream, err := conn.CreateStream(headers)
	require.NoError(t, err)
	require.NoError(t, errStream.Close()) // the client writes nothing there
	headers.Set(v1.StreamType, v1.StreamTypeData)
	dataStream, err := conn.CreateStream(headers)
	require.NoError(t, err)

	// When forwarding fails, the server resets the data stream: the
	// write or the read may fail, and the error stream tells why.
	if _, err := io.WriteString(dataStream, payload); err == nil {
		_ = dataStream.Close() // half-close: the target sees EOF
		got, _ := io.ReadAll(dataStream)
		data = string(got)
	}
	msg, err := io.ReadAll(errStream)
	require.NoError(t, err)
	return data, string(msg)
}

func TestStreamingPortForward(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.sim.ScriptPortForward(Match{Pod: "web"}, 80, echoServer(t))
	podID := e.runPod(t, "web")

	resp, err := e.rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: podID, Port: []int32{80}})
	require.NoError(t, err)
	data, errMsg := forward(t, resp.Url, 80, "hello through the tunnel")
	require.Equal(t, "hello through the tunnel", data)
	require.Empty(t, errMsg)

	resp, err = e.rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: podID, Port: []int32{81}})
	require.NoError(t, err)
	data, errMsg = forward(t, resp.Url, 81, "lost")
	require.Empty(t, data)
	require.Contains(t, errMsg, "no port forward scripted for port 81 of pod sandbox default/web")
}

func TestStopEndsStreamingSessions(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // after the echo server's cleanup
	ctx := context.Background()

	sim := New(Config{Clock: clocktesting.NewFakeClock(epoch), Images: []Image{{Ref: appImage}}})
	sim.ScriptLogs(Match{}, "up")
	sim.ScriptExec(Match{}, []string{"hang"}, ExecResult{Delay: time.Hour})
	sim.ScriptPortForward(Match{}, 0, echoServer(t))
	endpoint, stop, err := sim.ListenAndServe(filepath.Join(tempDir(t), "cri.sock"))
	require.NoError(t, err)
	defer stop()
	rt, err := remote.NewRemoteRuntimeService(ctx, endpoint, rpcTimeout, nil, false)
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Close(ctx)) }()
	podID, err := rt.RunPodSandbox(ctx, podConfig("web"), "")
	require.NoError(t, err)
	id, err := rt.CreateContainer(ctx, podID, containerConfig("app"), nil)
	require.NoError(t, err)
	require.NoError(t, rt.StartContainer(ctx, id))

	// An attach and an exec that would never end on their own.
	attach, err := rt.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id, Stdout: true})
	require.NoError(t, err)
	exec, err := rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"hang"}, Stdout: true})
	require.NoError(t, err)
	var stdout syncBuffer
	ended := make(chan error, 2)
	go func() { ended <- session(attach.Url, remotecommand.StreamOptions{Stdout: &stdout}) }()
	go func() { ended <- session(exec.Url, remotecommand.StreamOptions{Stdout: io.Discard}) }()
	require.Eventually(t, func() bool { return stdout.String() == "up\n" }, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return sim.clock.(*clocktesting.FakeClock).HasWaiters() }, 5*time.Second, time.Millisecond,
		"the exec waits for its delay")

	// And a port forward whose client and target keep the connection open.
	pf, err := rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: podID})
	require.NoError(t, err)
	conn, data := openForward(t, pf.Url, 8080)
	defer conn.Close()
	_, err = io.WriteString(data, "ping")
	require.NoError(t, err)
	buf := make([]byte, 4)
	_, err = io.ReadFull(data, buf)
	require.NoError(t, err)
	require.Equal(t, "ping", string(buf))

	stop()
	<-ended
	<-ended
	_, err = io.ReadAll(data)
	require.NoError(t, err, "the forwarded stream ends")
	<-conn.CloseChan()
	_, err = rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"ls"}, Stdout: true})
	require.Error(t, err, "the server is gone")
}
