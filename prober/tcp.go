package prober

import (
	"context"
	"fmt"
)

// probeTCP succeeds when a TCP connection to addr can be opened, like
// upstream's tcp prober. The connection is reset on close, leaving no
// TIME-WAIT socket.
func (n *network) probeTCP(ctx context.Context, addr string) (outcome, string) {
	conn, err := n.dial(ctx, addr)
	if err != nil {
		if timedOut(ctx) {
			return failure, fmt.Sprintf("dial tcp %s: i/o timeout", addr)
		}
		return failure, err.Error()
	}
	if err := conn.Close(); err != nil {
		return success, fmt.Sprintf("closing probe socket: %v", err)
	}
	return success, ""
}
