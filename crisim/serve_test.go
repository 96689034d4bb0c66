package crisim

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	clocktesting "k8s.io/utils/clock/testing"
)

func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "crisim")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func TestStopEndsPendingCalls(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	defer goleak.VerifyNone(t, ignore)
	ctx := context.Background()

	fc := clocktesting.NewFakeClock(epoch)
	sim := New(Config{Clock: fc, Images: []Image{{Ref: appImage}}})
	sim.Script(Match{}, Script{StopDelay: time.Hour})
	sock := filepath.Join(tempDir(t), "cri.sock")
	endpoint, stop, err := sim.ListenAndServe(sock)
	require.NoError(t, err)
	require.Equal(t, "unix://"+sock, endpoint)

	rt, err := remote.NewRemoteRuntimeService(ctx, endpoint, rpcTimeout, nil, false)
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Close(ctx)) }()
	podID, err := rt.RunPodSandbox(ctx, podConfig("web"), "")
	require.NoError(t, err)
	id, err := rt.CreateContainer(ctx, podID, containerConfig("app"), nil)
	require.NoError(t, err)
	require.NoError(t, rt.StartContainer(ctx, id))

	// Three calls that would wait forever: an event stream, a stop with a
	// long timeout, and a call delayed by injected latency.
	pending := make(chan error, 3)
	go func() {
		pending <- rt.GetContainerEvents(ctx, make(chan *runtimeapi.ContainerEventResponse, 10), nil)
	}()
	go func() { pending <- rt.StopContainer(ctx, id, 3600) }()
	sim.Inject("ListContainers", Fault{Latency: time.Hour})
	go func() {
		_, err := rt.ListContainers(ctx, nil)
		pending <- err
	}()
	require.Eventually(t, func() bool { return fc.Waiters() == 2 && sim.subscribers() == 1 }, 5*time.Second, time.Millisecond)

	begin := time.Now()
	stop()
	require.Less(t, time.Since(begin), DefaultShutdownGrace, "stop was graceful, not forced")
	for range 3 {
		require.Error(t, <-pending)
	}
	stop() // idempotent
	_, err = os.Stat(sock)
	require.ErrorIs(t, err, fs.ErrNotExist, "the socket is removed")
}

func TestListenAndServeSocketPath(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	defer goleak.VerifyNone(t, ignore)
	sim := New(Config{})

	_, _, err := sim.ListenAndServe("/tmp/" + strings.Repeat("x", 120))
	require.ErrorContains(t, err, "longer than")

	// A socket left behind by a crashed server is replaced.
	sock := filepath.Join(tempDir(t), "cri.sock")
	lis, err := net.Listen("unix", sock)
	require.NoError(t, err)
	lis.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, lis.Close())
	_, stop, err := sim.ListenAndServe(sock)
	require.NoError(t, err)
	stop()

	// Any other file is not.
	require.NoError(t, os.WriteFile(sock, nil, 0o600))
	_, _, err = sim.ListenAndServe(sock)
	require.Error(t, err)
}

func TestStartWithRealClock(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	ctx := context.Background()

	sim, endpoint := Start(t, Config{Images: []Image{{Ref: appImage}}})
	sim.Script(Match{Container: "app"}, Script{ExitAfter: 20 * time.Millisecond, ExitCode: 7})
	rt, err := remote.NewRemoteRuntimeService(ctx, endpoint, rpcTimeout, nil, false)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(ctx)) })

	podID, err := rt.RunPodSandbox(ctx, podConfig("web"), "")
	require.NoError(t, err)
	id, err := rt.CreateContainer(ctx, podID, containerConfig("app"), nil)
	require.NoError(t, err)
	require.NoError(t, rt.StartContainer(ctx, id))
	require.Eventually(t, func() bool {
		resp, err := rt.ContainerStatus(ctx, id, false)
		require.NoError(t, err)
		return resp.Status.ExitCode == 7
	}, 5*time.Second, 5*time.Millisecond)
	resp, err := rt.ContainerStatus(ctx, id, false)
	require.NoError(t, err)
	require.GreaterOrEqual(t, resp.Status.FinishedAt-resp.Status.StartedAt, (20 * time.Millisecond).Nanoseconds())
}
