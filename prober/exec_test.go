package prober

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/crisim"
)

const appImage = "example.com/app:v1"

// criEnv is a CRI simulator on a fake clock, reached through cri-client,
// with one running container "app" in pod "web".
type criEnv struct {
	sim     *crisim.Sim
	clock   *clocktesting.FakeClock
	runner  CommandRunner
	podID   string
	id      string // bare container ID
	fullID  string // "crisim://<id>"
	started time.Time
}

func newCRIEnv(t *testing.T) *criEnv {
	t.Helper()
	fc := clocktesting.NewFakeClock(epoch)
	sim, endpoint := crisim.Start(t, crisim.Config{Clock: fc, Images: []crisim.Image{{Ref: appImage}}})
	ctx := context.Background()
	rt, err := remote.NewRemoteRuntimeService(ctx, endpoint, 10*time.Second, nil, false)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(ctx)) })
	podCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"}}
	podID, err := rt.RunPodSandbox(ctx, podCfg, "")
	require.NoError(t, err)
	id, err := rt.CreateContainer(ctx, podID, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: appImage}}, podCfg)
	require.NoError(t, err)
	require.NoError(t, rt.StartContainer(ctx, id))
	st, err := rt.ContainerStatus(ctx, id, false)
	require.NoError(t, err)
	return &criEnv{sim: sim, clock: fc, runner: rt, podID: podID, id: id, fullID: "crisim://" + id,
		started: time.Unix(0, st.Status.StartedAt)}
}

func TestExecProbeThroughCRI(t *testing.T) {
	leakCheck(t)
	e := newCRIEnv(t)
	app := crisim.Match{Container: "app"}
	e.sim.ScriptExec(app, []string{"ok"}, crisim.ExecResult{Stdout: "fine\n"})
	e.sim.ScriptExec(app, []string{"fail"}, crisim.ExecResult{Stdout: "out ", Stderr: "err", ExitCode: 3})
	e.sim.ScriptExec(app, []string{"flood"}, crisim.ExecResult{Stdout: strings.Repeat("o", 1<<20), Stderr: "tail", ExitCode: 1})
	n := newNetwork(DefaultUserAgent, e.clock)

	cases := []struct {
		name    string
		id      string
		cmd     []string
		want    outcome
		wantOut string
		wantErr bool
	}{
		{"exit 0", e.id, []string{"ok"}, success, "fine\n", false},
		{"exit 3", e.id, []string{"fail"}, failure, "out err", false},
		{"flood is capped", e.id, []string{"flood"}, failure, strings.Repeat("o", MaxOutput), false},
		{"unknown container errors", "nope", []string{"ok"}, unknown, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, release := n.withTimeout(context.Background(), time.Second)
			defer release()
			out, msg, err := probeExec(ctx, e.runner, tc.id, tc.cmd, time.Second)
			require.Equal(t, tc.want, out)
			require.Equal(t, tc.wantOut, msg)
			require.Equal(t, tc.wantErr, err != nil, "%v", err)
		})
	}

	t.Run("hang times out", func(t *testing.T) {
		e.sim.ScriptExec(app, []string{"hang"}, crisim.ExecResult{Delay: time.Hour})
		ctx, release := n.withTimeout(context.Background(), time.Second)
		defer release()
		type res struct {
			out outcome
			msg string
			err error
		}
		done := make(chan res, 1)
		go func() {
			out, msg, err := probeExec(ctx, e.runner, e.id, []string{"hang"}, time.Second)
			done <- res{out, msg, err}
		}()
		// Our timer and the simulator's exec both wait on the clock.
		require.Eventually(t, func() bool { return e.clock.Waiters() >= 2 }, 5*time.Second, time.Millisecond)
		e.clock.Step(time.Second)
		r := <-done
		require.NoError(t, r.err)
		require.Equal(t, failure, r.out)
		require.Contains(t, r.msg, "timed out")
	})

	t.Run("no runner", func(t *testing.T) {
		out, _, err := probeExec(context.Background(), nil, e.id, []string{"ok"}, time.Second)
		require.Equal(t, unknown, out)
		require.ErrorIs(t, err, ErrNoRunner)
	})
}
