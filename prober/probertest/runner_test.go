package probertest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	utilexec "k8s.io/utils/exec"

	"github.com/nodekit/nodekit/prober/probertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunnerReplies(t *testing.T) {
	broken := errors.New("runtime broken")
	for _, tc := range []struct {
		name       string
		script     func(r *probertest.Runner)
		wantOut    string
		wantErr    error
		wantStatus int // ExitStatus of the error, -1 for none
	}{
		{"default", func(*probertest.Runner) {}, "", nil, -1},
		{"exit 0", func(r *probertest.Runner) { r.SetExit("check now", 0) }, "", nil, -1},
		{"exit 3", func(r *probertest.Runner) { r.SetExit("check now", 3) }, "", nil, 3},
		{"output and exit", func(r *probertest.Runner) {
			r.Set("check now", probertest.Reply{Stdout: []byte("out "), Stderr: []byte("err"), ExitCode: 1})
		}, "out err", nil, 1},
		{"error", func(r *probertest.Runner) { r.SetError("check now", broken) }, "", broken, -1},
		{"func", func(r *probertest.Runner) {
			r.SetFunc("check now", func(_ context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
				return []byte(id + ":" + cmd[1]), nil, nil
			})
		}, "c1:now", nil, -1},
		{"other command scripted", func(r *probertest.Runner) { r.SetExit("check", 1) }, "", nil, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r probertest.Runner
			tc.script(&r)
			stdout, stderr, err := r.ExecSync(context.Background(), "c1", []string{"check", "now"}, time.Second)
			require.Equal(t, tc.wantOut, string(stdout)+string(stderr))
			switch {
			case tc.wantErr != nil:
				require.ErrorIs(t, err, tc.wantErr)
			case tc.wantStatus >= 0:
				var exit utilexec.ExitError
				require.ErrorAs(t, err, &exit, "cri-client's exit error type")
				require.Equal(t, tc.wantStatus, exit.ExitStatus())
				require.ErrorContains(t, err, "command 'check now' exited with")
			default:
				require.NoError(t, err)
			}
			require.Equal(t, []probertest.Call{{ContainerID: "c1", Cmd: []string{"check", "now"}, Timeout: time.Second}}, r.Calls())
		})
	}
}

func TestRunnerBlock(t *testing.T) {
	var r probertest.Runner
	r.Block("slow")
	start := func(ctx context.Context) chan error {
		errc := make(chan error, 1)
		go func() {
			_, _, err := r.ExecSync(ctx, "c1", []string{"slow"}, time.Second)
			errc <- err
		}()
		return errc
	}
	waitCalls := func(n int) {
		require.Eventually(t, func() bool { return len(r.Calls()) == n }, 5*time.Second, time.Millisecond)
	}

	// Until the context ends.
	ctx, cancel := context.WithCancel(context.Background())
	errc := start(ctx)
	waitCalls(1)
	select {
	case err := <-errc:
		t.Fatalf("returned early: %v", err)
	default:
	}
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)

	// Or until the script changes, which then answers.
	errc = start(context.Background())
	waitCalls(2)
	r.SetExit("other", 1) // another command: still blocked
	r.SetExit("slow", 2)
	var exit utilexec.ExitError
	require.ErrorAs(t, <-errc, &exit)
	require.Equal(t, 2, exit.ExitStatus())
}

func TestRunnerConcurrentCalls(t *testing.T) {
	var r probertest.Runner
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if i%2 == 0 {
				r.SetExit("probe", i)
			}
			_, _, _ = r.ExecSync(context.Background(), "c1", []string{"probe"}, time.Second)
		})
	}
	wg.Wait()
	calls := r.Calls()
	require.Len(t, calls, 8)
	calls[0].Cmd[0] = "changed"
	require.Equal(t, "probe", r.Calls()[0].Cmd[0], "Calls returns copies")
}
