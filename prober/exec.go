package prober

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	remote "k8s.io/cri-client/pkg"
)

// probeExec runs cmd in the container through the runner: exit code 0
// succeeds, another exit code or a timeout fails, and any other error is an
// error (retried, then reported, result discarded), like upstream's exec
// prober. The output kept for the event is the first MaxOutput bytes of
// stdout followed by stderr.
func probeExec(ctx context.Context, r CommandRunner, containerID string, cmd []string, timeout time.Duration) (outcome, string, error) {
	if r == nil {
		return unknown, "", ErrNoRunner
	}
	stdout, stderr, err := r.ExecSync(ctx, containerID, cmd, timeout)
	out := capOutput(stdout, stderr)
	if err == nil {
		return success, out, nil
	}
	var exit interface{ ExitStatus() int }
	switch {
	case errors.As(err, &exit):
		if exit.ExitStatus() == 0 {
			return success, out, nil
		}
		return failure, out, nil
	case timedOut(ctx):
		return failure, "command timed out after " + timeout.String(), nil
	case errors.Is(err, remote.ErrCommandTimedOut), errors.Is(err, context.DeadlineExceeded),
		status.Code(err) == codes.DeadlineExceeded:
		return failure, err.Error(), nil
	}
	return unknown, "", err
}

func capOutput(stdout, stderr []byte) string {
	if len(stdout) >= MaxOutput {
		return string(stdout[:MaxOutput])
	}
	if rest := MaxOutput - len(stdout); len(stderr) > rest {
		stderr = stderr[:rest]
	}
	return string(stdout) + string(stderr)
}
