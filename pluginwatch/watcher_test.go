package pluginwatch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/pluginwatch"
	"github.com/nodekit/nodekit/pluginwatch/pluginwatchtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// shortDir is a directory whose socket paths fit in sun_path (108 bytes).
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "pw")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

func serve(t *testing.T, socket, typ, name string) *pluginwatchtest.Plugin {
	t.Helper()
	p, err := pluginwatchtest.Serve(socket, &registerapi.PluginInfo{Type: typ, Name: name, SupportedVersions: []string{"1.0.0"}})
	require.NoError(t, err)
	t.Cleanup(p.Stop)
	return p
}

func TestRegisterAndDeregister(t *testing.T) {
	ctx := context.Background()
	dir := shortDir(t)
	h := &pluginwatchtest.Handler{}
	clk := testclock.NewFakeClock(time.Unix(1000, 0))
	w, err := pluginwatch.New(pluginwatch.Config{Dir: dir, Handlers: map[string]pluginwatch.Handler{registerapi.CSIPlugin: h}, Clock: clk})
	require.NoError(t, err)
	require.NoError(t, w.Sync(ctx))
	require.Empty(t, w.Plugins())

	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o750))
	sock := filepath.Join(dir, "sub", "a.sock")
	p := serve(t, sock, registerapi.CSIPlugin, "csi.example.com")
	// A file and a dot-directory are not plugins.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes"), nil, 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, ".hidden"), 0o750))
	serve(t, filepath.Join(dir, ".hidden", "b.sock"), registerapi.CSIPlugin, "hidden")

	require.NoError(t, w.Sync(ctx))
	require.Equal(t, []pluginwatch.Plugin{{Socket: sock, Endpoint: sock, Type: registerapi.CSIPlugin, Name: "csi.example.com",
		Versions: []string{"1.0.0"}}}, w.Plugins())
	require.Equal(t, []string{"register csi.example.com"}, h.Log())
	require.Len(t, p.Statuses(), 1)
	require.True(t, p.Statuses()[0].PluginRegistered)

	// Unchanged: nothing happens.
	require.NoError(t, w.Sync(ctx))
	require.Len(t, h.Log(), 1)

	// The plugin restarts: a new socket at the same path re-registers.
	p.Stop()
	_ = os.Remove(sock)
	serve(t, sock, registerapi.CSIPlugin, "csi.example.com")
	require.NoError(t, w.Sync(ctx))
	require.Equal(t, []string{"register csi.example.com", "deregister csi.example.com", "register csi.example.com"}, h.Log())

	// The socket goes: deregistered.
	require.NoError(t, os.Remove(sock))
	require.NoError(t, w.Sync(ctx))
	require.Empty(t, w.Plugins())
	require.Equal(t, "deregister csi.example.com", h.Log()[3])
}

func TestFailedRegistrationIsRetriedAfterBackOff(t *testing.T) {
	ctx := context.Background()
	dir := shortDir(t)
	h := &pluginwatchtest.Handler{Err: errors.New("API server unavailable")}
	clk := testclock.NewFakeClock(time.Unix(1000, 0))
	w, err := pluginwatch.New(pluginwatch.Config{Dir: dir, Handlers: map[string]pluginwatch.Handler{registerapi.CSIPlugin: h}, Clock: clk})
	require.NoError(t, err)
	p := serve(t, filepath.Join(dir, "a.sock"), registerapi.CSIPlugin, "csi.example.com")

	err = w.Sync(ctx)
	require.ErrorContains(t, err, "API server unavailable")
	require.Len(t, p.Statuses(), 1)
	require.False(t, p.Statuses()[0].PluginRegistered)
	require.Contains(t, p.Statuses()[0].Error, "API server unavailable")

	// In back-off: not tried again yet.
	h.SetErr(nil)
	require.NoError(t, w.Sync(ctx))
	require.Len(t, p.Statuses(), 1)
	clk.Step(600 * time.Millisecond)
	require.NoError(t, w.Sync(ctx))
	require.Len(t, p.Statuses(), 2)
	require.True(t, p.Statuses()[1].PluginRegistered)
	require.Len(t, w.Plugins(), 1)
}

func TestUnknownTypeIsRefused(t *testing.T) {
	dir := shortDir(t)
	w, err := pluginwatch.New(pluginwatch.Config{Dir: dir, Handlers: map[string]pluginwatch.Handler{registerapi.CSIPlugin: &pluginwatchtest.Handler{}},
		Clock: testclock.NewFakeClock(time.Unix(1000, 0))})
	require.NoError(t, err)
	p := serve(t, filepath.Join(dir, "dp.sock"), registerapi.DevicePlugin, "example.com/gpu")
	require.ErrorContains(t, w.Sync(context.Background()), `no handler for plugin type "DevicePlugin"`)
	require.Equal(t, `no handler for plugin type "DevicePlugin" (plugin "example.com/gpu")`, p.Statuses()[0].Error)
}

func TestRunStopsWithContext(t *testing.T) {
	dir := shortDir(t)
	h := &pluginwatchtest.Handler{}
	clk := testclock.NewFakeClock(time.Unix(1000, 0))
	w, err := pluginwatch.New(pluginwatch.Config{Dir: dir, Handlers: map[string]pluginwatch.Handler{registerapi.CSIPlugin: h}, Clock: clk})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	require.Eventually(t, clk.HasWaiters, time.Second, time.Millisecond)
	serve(t, filepath.Join(dir, "a.sock"), registerapi.CSIPlugin, "csi.example.com")
	clk.Step(time.Second)
	require.Eventually(t, func() bool { return len(w.Plugins()) == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}

func TestNewValidates(t *testing.T) {
	for name, cfg := range map[string]pluginwatch.Config{
		"relative dir": {Dir: "plugins_registry", Handlers: map[string]pluginwatch.Handler{"CSIPlugin": &pluginwatchtest.Handler{}}},
		"no handlers":  {Dir: "/tmp/x"},
		"nil handler":  {Dir: "/tmp/x", Handlers: map[string]pluginwatch.Handler{"CSIPlugin": nil}},
	} {
		_, err := pluginwatch.New(cfg)
		require.ErrorIs(t, err, pluginwatch.ErrInvalidConfig, name)
	}
}
