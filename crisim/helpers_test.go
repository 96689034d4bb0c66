package crisim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	pauseImage = "registry.k8s.io/pause:3.10"
	appImage   = "example.com/app:v1"
	rpcTimeout = 10 * time.Second
)

// epoch is where fake clocks start; CRI clients reject zero timestamps.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// logRoot holds the log directories of the sandboxes of podConfig: started
// containers write their logs there.
var logRoot string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "crisim-logs")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	logRoot = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// env is a Sim served on a socket with cri-client runtime and image clients.
type env struct {
	sim      *Sim
	endpoint string
	clock    *clocktesting.FakeClock
	rt       internalapi.RuntimeService
	img      internalapi.ImageManagerService
}

type envOption func(*Config, *bool)

// streaming makes the clients use the Stream* list RPCs.
func streaming(cfg *Config, useStreaming *bool) { *useStreaming = true }

func withConfig(f func(*Config)) envOption {
	return func(cfg *Config, _ *bool) { f(cfg) }
}

// newEnv starts a Sim on a fake clock and connects cri-client to it. When
// the test ends the clients are closed, the server stopped, and goleak
// checks that no goroutine outlives them.
func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })

	fc := clocktesting.NewFakeClock(epoch)
	cfg := Config{Clock: fc, Images: []Image{{Ref: pauseImage, Size: 700_000, Pinned: true}, {Ref: appImage, Size: 5_000_000}}}
	useStreaming := false
	for _, o := range opts {
		o(&cfg, &useStreaming)
	}
	sim, endpoint := Start(t, cfg)

	ctx := context.Background()
	rt, err := remote.NewRemoteRuntimeService(ctx, endpoint, rpcTimeout, nil, useStreaming)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(ctx)) })
	img, err := remote.NewRemoteImageService(ctx, endpoint, rpcTimeout, nil, useStreaming)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, img.Close(ctx)) })
	return &env{sim: sim, endpoint: endpoint, clock: fc, rt: rt, img: img}
}

func podConfig(name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
		LogDirectory: filepath.Join(logRoot, "default_"+name),
		Labels:       map[string]string{"app": name},
		Annotations:  map[string]string{"note": "pod " + name},
	}
}

func containerConfig(name string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: name, Attempt: 1},
		Image:       &runtimeapi.ImageSpec{Image: appImage},
		Labels:      map[string]string{"container": name},
		Annotations: map[string]string{"note": "container " + name},
		LogPath:     name + "/1.log",
	}
}

// runPod creates a READY sandbox.
func (e *env) runPod(t *testing.T, name string) string {
	t.Helper()
	id, err := e.rt.RunPodSandbox(context.Background(), podConfig(name), "")
	require.NoError(t, err)
	return id
}

// createContainer creates a container named name in the sandbox.
func (e *env) createContainer(t *testing.T, podID, name string) string {
	t.Helper()
	id, err := e.rt.CreateContainer(context.Background(), podID, containerConfig(name), podConfig("ignored"))
	require.NoError(t, err)
	return id
}

// startContainer creates and starts a container named name in the sandbox.
func (e *env) startContainer(t *testing.T, podID, name string) string {
	t.Helper()
	id := e.createContainer(t, podID, name)
	require.NoError(t, e.rt.StartContainer(context.Background(), id))
	return id
}

func (e *env) containerStatus(t *testing.T, id string) *runtimeapi.ContainerStatus {
	t.Helper()
	resp, err := e.rt.ContainerStatus(context.Background(), id, false)
	require.NoError(t, err)
	return resp.Status
}

// waitState polls ContainerStatus until the container reaches state.
func (e *env) waitState(t *testing.T, id string, state runtimeapi.ContainerState) *runtimeapi.ContainerStatus {
	t.Helper()
	var st *runtimeapi.ContainerStatus
	require.Eventually(t, func() bool {
		st = e.containerStatus(t, id)
		return st.State == state
	}, 5*time.Second, 5*time.Millisecond, "container %s never reached %s", id, state)
	return st
}

// waitWaiters waits until the fake clock has n pending waiters.
func (e *env) waitWaiters(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return e.clock.Waiters() == n }, 5*time.Second, time.Millisecond,
		"fake clock never had %d waiters", n)
}

func requireCode(t *testing.T, want codes.Code, err error) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, want, status.Code(err), "error: %v", err)
}

// nanos is t in the nanosecond timestamps the CRI uses.
func nanos(t time.Time) int64 { return t.UnixNano() }
