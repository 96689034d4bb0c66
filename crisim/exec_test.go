package crisim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	remote "k8s.io/cri-client/pkg"
	utilexec "k8s.io/utils/exec"
)

func TestExecSync(t *testing.T) {
	e := newEnv(t)
	e.sim.ScriptExec(Match{Container: "app"}, []string{"cat", "/ready"}, ExecResult{Stdout: "ok\n"})
	e.sim.ScriptExec(Match{Container: "app"}, []string{"false"}, ExecResult{Stderr: "nope", ExitCode: 1})
	e.sim.ScriptExec(Match{}, []string{"sh", "-c"}, ExecResult{Stdout: "generic"})
	podID := e.runPod(t, "web")
	app := e.startContainer(t, podID, "app")
	side := e.startContainer(t, podID, "side")

	cases := []struct {
		name       string
		id         string
		cmd        []string
		wantStdout string
		wantStderr string
		wantCode   int
	}{
		{"exact", app, []string{"cat", "/ready"}, "ok\n", "", 0},
		{"prefix", app, []string{"cat", "/ready", "-n"}, "ok\n", "", 0},
		{"unscripted", app, []string{"cat", "/other"}, "", "", 0},
		{"non-zero exit", app, []string{"false"}, "", "nope", 1},
		{"any container", side, []string{"sh", "-c", "echo"}, "generic", "", 0},
		{"other container", side, []string{"cat", "/ready"}, "", "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, err := e.rt.ExecSync(context.Background(), tc.id, tc.cmd, 5*time.Second)
			require.Equal(t, tc.wantStdout, string(stdout))
			require.Equal(t, tc.wantStderr, string(stderr))
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

func TestExecSyncDelayAndTimeout(t *testing.T) {
	e := newEnv(t)
	e.sim.ScriptExec(Match{}, []string{"slow"}, ExecResult{Stdout: "done", Delay: 2 * time.Second})
	e.sim.ScriptExec(Match{}, []string{"hang"}, ExecResult{Delay: time.Minute})
	podID := e.runPod(t, "web")
	id := e.startContainer(t, podID, "app")

	type result struct {
		stdout []byte
		err    error
	}
	execAsync := func(cmd string, timeout time.Duration) <-chan result {
		c := make(chan result, 1)
		go func() {
			stdout, _, err := e.rt.ExecSync(context.Background(), id, []string{cmd}, timeout)
			c <- result{stdout, err}
		}()
		return c
	}

	slow := execAsync("slow", 5*time.Second)
	e.waitWaiters(t, 1)
	e.clock.Step(2 * time.Second)
	res := <-slow
	require.NoError(t, res.err)
	require.Equal(t, "done", string(res.stdout))

	hang := execAsync("hang", 3*time.Second)
	e.waitWaiters(t, 1)
	e.clock.Step(3 * time.Second)
	res = <-hang
	require.True(t, errors.Is(res.err, remote.ErrCommandTimedOut), "got %v", res.err)
}

func TestExecSyncNotRunning(t *testing.T) {
	e := newEnv(t)
	podID := e.runPod(t, "web")
	created := e.createContainer(t, podID, "created")
	exited := e.startContainer(t, podID, "exited")
	require.NoError(t, e.sim.ExitContainer(exited, 0, ""))

	for _, id := range []string{created, exited} {
		_, _, err := e.rt.ExecSync(context.Background(), id, []string{"true"}, time.Second)
		requireCode(t, codes.FailedPrecondition, err)
	}
}
