package crisim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// maxSocketPath is the longest unix socket path Linux accepts (sun_path is
// 108 bytes including the terminating NUL).
const maxSocketPath = 107

// ListenAndServe serves the CRI runtime and image services on a new unix
// socket at socketPath, replacing a stale socket left there. It returns the
// endpoint to give to cri-client ("unix://" + socketPath) and a function
// that stops serving: it ends event streams and pending waits (latency,
// StopContainer, ExecSync), stops the streaming server of Exec, Attach and
// PortForward (if an RPC started it) with its sessions, stops the gRPC
// server gracefully, forces it after Config.ShutdownGrace (on Config.Clock), and returns once
// every server goroutine has exited. stop is idempotent. Containers keep
// their state and timers; the Sim may be served again.
func (s *Sim) ListenAndServe(socketPath string) (endpoint string, stop func(), err error) {
	if len(socketPath) > maxSocketPath {
		return "", nil, fmt.Errorf("crisim: socket path %q is %d bytes, longer than the %d a unix socket allows",
			socketPath, len(socketPath), maxSocketPath)
	}
	if err := removeStaleSocket(socketPath); err != nil {
		return "", nil, err
	}
	lis, err := net.Listen("unix", socketPath)
	if err != nil {
		return "", nil, fmt.Errorf("crisim: listen: %w", err)
	}

	quit, cancel := context.WithCancel(context.Background())
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(s.unaryInterceptor(quit)),
		grpc.ChainStreamInterceptor(s.streamInterceptor(quit)),
		grpc.WaitForHandlers(true),
	)
	stream := newStreamServer(s, quit)
	runtimeapi.RegisterRuntimeServiceServer(srv, &runtimeService{sim: s, stream: stream})
	runtimeapi.RegisterImageServiceServer(srv, &imageService{sim: s})

	served := make(chan struct{})
	go func() {
		defer close(served)
		// Serve only fails if the listener breaks; clients then see
		// Unavailable, which is what a crashed runtime looks like.
		_ = srv.Serve(lis)
	}()

	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			stream.stop()
			s.shutdown(srv, s.cfg.ShutdownGrace)
			<-served
		})
	}
	return "unix://" + socketPath, stop, nil
}

// shutdown stops srv gracefully, or forcibly once grace has elapsed on
// the injected clock.
func (s *Sim) shutdown(srv *grpc.Server, grace time.Duration) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.GracefulStop()
	}()
	t := s.clock.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C():
		srv.Stop()
		<-done
	}
}

// removeStaleSocket deletes a socket file left at path by an earlier
// server; any other kind of file is left for net.Listen to complain about.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("crisim: %w", err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return nil
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("crisim: remove stale socket: %w", err)
	}
	return nil
}

// linkContext returns a child of ctx that is also cancelled when quit is.
func linkContext(ctx, quit context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(quit, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// ctxStream overrides the context of a server stream.
type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

// Context returns the overridden context.
func (c *ctxStream) Context() context.Context {
	return c.ctx
}
