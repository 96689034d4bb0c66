package crisim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	cristreaming "k8s.io/cri-streaming/pkg/streaming"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

type forwardRule struct {
	match Match
	port  int32
	addr  string
}

// ScriptPortForward makes port forwarding to port of the pod sandboxes
// selected by m (whose Container field is ignored) connect to the TCP
// address addr, typically a listener of the test. Port 0 stands for every
// port. When several rules match, the last one registered wins; without
// any, forwarding fails and the client gets the error on the port's error
// stream.
func (s *Sim) ScriptPortForward(m Match, port int32, addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forwards = append(s.forwards, forwardRule{match: Match{Pod: m.Pod, Namespace: m.Namespace}, port: port, addr: addr})
}

// forwardAddr returns the address scripted for port of the sandbox.
func (s *Sim) forwardAddr(sandboxID string, port int32) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[sandboxID]
	if !ok {
		return "", notFound("pod sandbox", sandboxID)
	}
	target := Match{Pod: sb.meta.Name, Namespace: sb.meta.Namespace}
	for i := len(s.forwards) - 1; i >= 0; i-- {
		rule := s.forwards[i]
		if rule.match.matches(target) && (rule.port == 0 || rule.port == port) {
			return rule.addr, nil
		}
	}
	return "", fmt.Errorf("crisim: no port forward scripted for port %d of pod sandbox %s/%s", port, sb.meta.Namespace, sb.meta.Name)
}

// Exec checks that the container runs and returns the streaming URL of a
// session that plays the scripted ExecResult of the command.
func (r *runtimeService) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if len(req.Cmd) == 0 {
		return nil, invalid("exec command must not be empty")
	}
	if err := r.sim.checkRunning(req.ContainerId); err != nil {
		return nil, err
	}
	srv, err := r.stream.server()
	if err != nil {
		return nil, err
	}
	return srv.GetExec(req)
}

// Attach checks that the container runs and returns the streaming URL of a
// session that replays and follows its output.
func (r *runtimeService) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if err := r.sim.checkRunning(req.ContainerId); err != nil {
		return nil, err
	}
	srv, err := r.stream.server()
	if err != nil {
		return nil, err
	}
	return srv.GetAttach(req)
}

// PortForward checks that the sandbox is ready and returns the streaming
// URL of a session that connects each forwarded port to the address set
// with ScriptPortForward.
func (r *runtimeService) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	s := r.sim
	s.mu.Lock()
	sb, ok := s.sandboxes[req.PodSandboxId]
	var err error
	switch {
	case !ok:
		err = notFound("pod sandbox", req.PodSandboxId)
	case sb.state != runtimeapi.PodSandboxState_SANDBOX_READY:
		err = precondition("pod sandbox %q is not ready", sb.id)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	srv, err := r.stream.server()
	if err != nil {
		return nil, err
	}
	return srv.GetPortForward(req)
}

func (s *Sim) checkRunning(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.runningContainerLocked(id)
	return err
}

// streamServer is the HTTP server behind the streaming URLs of one
// ListenAndServe. It starts on first use and stop ends it with its
// sessions: upgraded connections are closed and every handler and session
// is waited for.
type streamServer struct {
	sim  *Sim
	quit context.Context // done when the gRPC server stops

	mu       sync.Mutex
	stopped  bool
	srv      cristreaming.Server
	http     *http.Server
	served   chan struct{}
	hijacked map[net.Conn]struct{}
	active   sync.WaitGroup // HTTP handlers and port forwards; Add only under mu while !stopped
}

func newStreamServer(sim *Sim, quit context.Context) *streamServer {
	return &streamServer{sim: sim, quit: quit, hijacked: map[net.Conn]struct{}{}}
}

// server returns the streaming server, starting it if needed.
func (ss *streamServer) server() (cristreaming.Server, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.stopped {
		return nil, status.Error(codes.Unavailable, "crisim: the runtime is stopping")
	}
	if ss.srv != nil {
		return ss.srv, nil
	}
	lis, err := net.Listen("tcp", ss.sim.cfg.StreamingAddr)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "crisim: streaming server: %v", err)
	}
	cfg := cristreaming.DefaultConfig
	cfg.Addr = lis.Addr().String()
	cfg.BaseURL = &url.URL{Scheme: "http", Host: cfg.Addr, Path: "/"}
	srv, err := cristreaming.NewServer(cfg, &streamRuntime{sim: ss.sim, ss: ss})
	if err != nil {
		_ = lis.Close()
		return nil, status.Errorf(codes.Internal, "crisim: streaming server: %v", err)
	}
	type connKey struct{}
	ss.srv = srv
	ss.served = make(chan struct{})
	ss.http = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !ss.begin() {
				http.Error(w, "crisim: the runtime is stopping", http.StatusServiceUnavailable)
				return
			}
			defer ss.active.Done()
			defer ss.forget(r.Context().Value(connKey{}).(net.Conn))
			srv.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		// Sessions end with the gRPC server.
		BaseContext: func(net.Listener) context.Context { return ss.quit },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		ConnState: func(c net.Conn, st http.ConnState) {
			if st == http.StateHijacked {
				ss.track(c)
			}
		},
	}
	go func() {
		defer close(ss.served)
		_ = ss.http.Serve(quietListener{lis})
	}()
	return srv, nil
}

// quietListener hands out connections whose Close reports no error. When
// stop closes an upgraded connection, the SPDY connection on it closes it
// again on its way out, and spdystream spends a second trying to report
// that error to nobody; a silent second Close lets it end at once.
type quietListener struct{ net.Listener }

func (l quietListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &quietConn{Conn: c}, nil
}

type quietConn struct {
	net.Conn
	once sync.Once
}

func (c *quietConn) Close() error {
	c.once.Do(func() { _ = c.Conn.Close() })
	return nil
}

// begin registers a handler or session, unless the server is stopping.
func (ss *streamServer) begin() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.stopped {
		return false
	}
	ss.active.Add(1)
	return true
}

// track records an upgraded connection, which http.Server no longer
// closes, so that stop can close it.
func (ss *streamServer) track(c net.Conn) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.stopped {
		_ = c.Close()
		return
	}
	ss.hijacked[c] = struct{}{}
}

// forget drops a connection whose handler has returned (the streaming
// handlers close their upgraded connection before returning).
func (ss *streamServer) forget(c net.Conn) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.hijacked, c)
}

// stop closes the listener and every connection, then waits for the
// handlers and sessions. The caller has cancelled quit, which ends the
// sessions' contexts. stop is idempotent.
func (ss *streamServer) stop() {
	ss.mu.Lock()
	ss.stopped = true
	hs, served := ss.http, ss.served
	ss.mu.Unlock()
	if hs == nil {
		return
	}
	_ = hs.Close()
	ss.mu.Lock()
	for c := range ss.hijacked {
		_ = c.Close()
	}
	clear(ss.hijacked)
	ss.mu.Unlock()
	<-served
	ss.active.Wait()
}

// streamRuntime plays the sessions of the streaming server.
type streamRuntime struct {
	sim *Sim
	ss  *streamServer
}

var _ cristreaming.Runtime = (*streamRuntime)(nil)

// Exec plays the scripted ExecResult of cmd: it waits for its Delay on the
// injected clock, echoes stdin to stdout if EchoStdin, writes Stdout and
// Stderr (both on stdout with a TTY), and returns a CodeExitError for a
// non-zero exit code, which the client sees as the command's exit code.
func (r *streamRuntime) Exec(ctx context.Context, containerID string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, _ <-chan remotecommand.TerminalSize) error {
	s := r.sim
	s.mu.Lock()
	c, err := s.runningContainerLocked(containerID)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	res := s.execResultLocked(c.target, cmd)
	s.mu.Unlock()

	if err := s.sleep(ctx, res.Delay); err != nil {
		return err
	}
	stdout, stderr := writers(out, errOut, tty)
	if res.EchoStdin && in != nil {
		if _, err := io.Copy(stdout, in); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(stdout, res.Stdout); err != nil {
		return err
	}
	if _, err := io.WriteString(stderr, res.Stderr); err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return utilexec.CodeExitError{
			Err:  fmt.Errorf("command %q exited with code %d", strings.Join(cmd, " "), res.ExitCode),
			Code: int(res.ExitCode),
		}
	}
	return nil
}

// Attach writes what the container printed since it started, then what it
// prints (AppendLog), stdout lines to stdout and stderr lines to stderr
// (both to stdout with a TTY), until the container exits, the client
// closes stdin (if it attached one; what it sends is discarded) or the
// server stops.
func (r *streamRuntime) Attach(ctx context.Context, containerID string, in io.Reader, out, errOut io.WriteCloser, tty bool, _ <-chan remotecommand.TerminalSize) error {
	s := r.sim
	s.mu.Lock()
	c, err := s.runningContainerLocked(containerID)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if in != nil {
		// Ends when the client closes stdin or when the handler closes
		// the connection after Attach returns.
		go func() {
			_, _ = io.Copy(io.Discard, in)
			cancel()
		}()
	}
	stdout, stderr := writers(out, errOut, tty)
	next := 0
	for {
		s.mu.Lock()
		entries, changed := c.outputLocked(next)
		running, exited := c.running(), c.exited
		next += len(entries)
		s.mu.Unlock()
		for _, e := range entries {
			w := stdout
			if e.line.Stderr {
				w = stderr
			}
			if _, err := io.WriteString(w, e.line.Text+"\n"); err != nil {
				return err
			}
		}
		if !running {
			// An exited container prints nothing more.
			return nil
		}
		select {
		case <-changed:
		case <-exited:
		case <-ctx.Done():
			return nil
		}
	}
}

// PortForward connects stream to the address scripted for the port with
// ScriptPortForward and copies both ways. When the client closes its side,
// the connection is closed for writing; the session ends when the target
// closes the connection (or the server stops), and the stream is then
// closed.
func (r *streamRuntime) PortForward(ctx context.Context, sandboxID string, port int32, stream io.ReadWriteCloser) error {
	if !r.ss.begin() {
		return errors.New("crisim: the runtime is stopping")
	}
	defer r.ss.active.Done()
	ctx, cancel := linkContext(ctx, r.ss.quit)
	defer cancel()
	// The streaming server calls PortForward as soon as the client has
	// opened the data stream, possibly before it has accepted the stream
	// (SYN_REPLY). If PortForward failed at once, the server would reset
	// the stream first: the client would see the stream refused instead of
	// the error, and the server's Close of the stream would wait forever
	// for the reply. A zero-length write waits for the reply (the client
	// ignores the empty frame); it only hangs if the connection died before
	// the reply, in which case that goroutine is lost with the stream.
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		_, _ = stream.Write(nil)
	}()
	select {
	case <-accepted:
	case <-ctx.Done():
		return ctx.Err()
	}
	addr, err := r.sim.forwardAddr(sandboxID, port)
	if err != nil {
		return err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	stopClose := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stopClose()

	// Client to target. It outlives PortForward when the client keeps its
	// side open; it ends when the client closes it or when stop closes
	// the upgraded connection, and stop waits for it.
	if !r.ss.begin() {
		return errors.New("crisim: the runtime is stopping")
	}
	go func() {
		defer r.ss.active.Done()
		_, _ = io.Copy(conn, stream)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, _ = io.Copy(stream, conn)
	return nil
}

// writers returns where a session writes stdout and stderr: io.Discard for
// a stream the client did not ask for, stdout for stderr with a TTY.
func writers(out, errOut io.Writer, tty bool) (stdout, stderr io.Writer) {
	stdout, stderr = io.Discard, io.Discard
	if out != nil {
		stdout = out
	}
	if errOut != nil {
		stderr = errOut
	} else if tty {
		stderr = stdout
	}
	return stdout, stderr
}
