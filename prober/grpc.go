package prober

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// probeGRPC calls grpc.health.v1.Health/Check for service at addr over
// plain text, like upstream's gRPC prober. SERVING succeeds; anything else
// fails with upstream's messages. Unlike upstream, an unreachable target
// fails at once instead of being retried until the timeout.
func (n *network) probeGRPC(ctx context.Context, addr, service string, timeout time.Duration) (outcome, string) {
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent(n.userAgent),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return n.dial(ctx, a) }),
	)
	if err != nil {
		return failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err)
	}
	defer func() { _ = conn.Close() }()

	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		if timedOut(ctx) {
			return failure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)
		}
		st := status.Convert(err)
		switch st.Code() {
		case codes.Unimplemented:
			return failure, fmt.Sprintf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.Message())
		case codes.DeadlineExceeded:
			return failure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)
		case codes.Unavailable:
			return failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err)
		}
		return failure, fmt.Sprintf("error: health rpc probe failed: %+v", err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return failure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String())
	}
	return success, "service healthy"
}
