package prober

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// grpcServer serves a gRPC server on loopback until the test ends.
func grpcServer(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer()
	register(s)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(l) }()
	t.Cleanup(func() { s.Stop(); <-done })
	return l.Addr().String()
}

func TestGRPCProbe(t *testing.T) {
	leakCheck(t)
	hs := health.NewServer()
	hs.SetServingStatus("up", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
	withHealth := grpcServer(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, hs) })
	without := grpcServer(t, func(*grpc.Server) {})

	cases := []struct {
		name, addr, service string
		want                outcome
		wantMsg             string
	}{
		{"serving (whole server)", withHealth, "", success, "service healthy"},
		{"serving", withHealth, "up", success, "service healthy"},
		{"not serving", withHealth, "down", failure, `service unhealthy (responded with "NOT_SERVING")`},
		{"unknown service", withHealth, "nope", failure, "error: health rpc probe failed"},
		{"no health service", without, "", failure, "does not implement the grpc health protocol"},
		{"nothing listening", joinHostPort("127.0.0.1", closedPort(t)), "", failure, "failed to connect service"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := realNet()
			ctx, release := n.withTimeout(context.Background(), 5*time.Second)
			defer release()
			out, msg := n.probeGRPC(ctx, tc.addr, tc.service, 5*time.Second)
			require.Equal(t, tc.want, out, msg)
			require.Contains(t, msg, tc.wantMsg)
		})
	}
}

type hangingHealth struct {
	healthpb.UnimplementedHealthServer
	release chan struct{}
}

func (h hangingHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return nil, ctx.Err()
}

func TestGRPCProbeTimeout(t *testing.T) {
	leakCheck(t)
	release := make(chan struct{})
	defer close(release)
	addr := grpcServer(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, hangingHealth{release: release}) })
	n := realNet()
	ctx, done := n.withTimeout(context.Background(), 200*time.Millisecond)
	defer done()
	out, msg := n.probeGRPC(ctx, addr, "", 200*time.Millisecond)
	require.Equal(t, failure, out)
	require.Contains(t, msg, "timeout: health rpc did not complete within 200ms")
}
