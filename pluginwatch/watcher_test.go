package pluginwatch_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	_, ok := w.NextWake()
	require.False(t, ok, "not running")
	go func() { done <- w.Run(ctx) }()
	var next time.Time
	require.Eventually(t, func() bool { next, ok = w.NextWake(); return ok }, 5*time.Second, time.Millisecond)
	require.Equal(t, clk.Now().Add(time.Second), next, "parked until the next look at the directory")
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

// hasEvent reports whether the handler's log holds ev.
func hasEvent(h *pluginwatchtest.Handler, ev string) bool { return slices.Contains(h.Log(), ev) }

// Sockets that never answer GetInfo hold up only their own registration: a
// healthy socket registers at once, and one that appears later at the next
// pass, before the clock reaches the hung ones' timeouts. Then the hung
// ones time out, on the injected clock.
func TestHungSocketsDelayOnlyThemselves(t *testing.T) {
	dir := shortDir(t)
	h := &pluginwatchtest.Handler{}
	clk := testclock.NewFakeClock(time.Unix(1000, 0))
	w, err := pluginwatch.New(pluginwatch.Config{Dir: dir, Handlers: map[string]pluginwatch.Handler{registerapi.CSIPlugin: h}, Clock: clk})
	require.NoError(t, err)
	var hung []*pluginwatchtest.Plugin
	for i := range 3 { // listed before the healthy one
		p := serve(t, filepath.Join(dir, fmt.Sprintf("a%d.sock", i)), registerapi.CSIPlugin, fmt.Sprintf("hung%d", i))
		p.Hold()
		hung = append(hung, p)
	}
	serve(t, filepath.Join(dir, "z.sock"), registerapi.CSIPlugin, "healthy")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	require.Eventually(t, func() bool { return hasEvent(h, "register healthy") }, 5*time.Second, time.Millisecond,
		"the healthy socket registers while the hung ones wait, the clock not moved")
	require.Eventually(t, func() bool {
		for _, p := range hung {
			if _, waiting, _ := p.Calls(); waiting != 1 {
				return false
			}
		}
		return true
	}, 5*time.Second, time.Millisecond, "each hung socket is asked once, concurrently")

	serve(t, filepath.Join(dir, "y.sock"), registerapi.CSIPlugin, "later")
	clk.Step(time.Second) // the next pass, well before the 10s timeout
	require.Eventually(t, func() bool { return len(w.Plugins()) == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, []string{"later", "healthy"}, pluginNames(w.Plugins()))
	for _, p := range hung {
		calls, waiting, _ := p.Calls()
		require.Equal(t, 1, calls, "a socket with an operation in flight is not asked again")
		require.Equal(t, 1, waiting)
	}

	clk.Step(10 * time.Second) // past the GetInfo timeout
	require.Eventually(t, func() bool {
		for _, p := range hung {
			if _, waiting, _ := p.Calls(); waiting != 0 {
				return false
			}
		}
		return true
	}, 5*time.Second, time.Millisecond, "the hung calls time out on the clock")
	for _, p := range hung {
		require.Empty(t, p.Statuses(), "no answer, no status")
	}
	require.Len(t, w.Plugins(), 2)
	cancel()
	require.NoError(t, <-done)
}

// One operation at a time per socket: a socket that goes while its
// registration is in flight is deregistered only after that registration
// ended, and is not asked again meanwhile.
func TestOperationsAreSerializedPerSocket(t *testing.T) {
	dir := shortDir(t)
	h := &pluginwatchtest.Handler{}
	clk := testclock.NewFakeClock(time.Unix(1000, 0))
	w, err := pluginwatch.New(pluginwatch.Config{Dir: dir, Handlers: map[string]pluginwatch.Handler{registerapi.CSIPlugin: h}, Clock: clk})
	require.NoError(t, err)
	sock := filepath.Join(dir, "slow.sock")
	slow := serve(t, sock, registerapi.CSIPlugin, "slow")
	slow.Hold()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	require.Eventually(t, func() bool { _, waiting, _ := slow.Calls(); return waiting == 1 }, 5*time.Second, time.Millisecond)

	// The socket goes while it is being registered; a marker socket shows
	// when the next pass has run.
	require.NoError(t, os.Remove(sock))
	serve(t, filepath.Join(dir, "marker.sock"), registerapi.CSIPlugin, "marker")
	clk.Step(time.Second)
	require.Eventually(t, func() bool { return len(w.Plugins()) == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, []string{"register marker"}, h.Log(), "nothing done to the busy socket")
	calls, _, _ := slow.Calls()
	require.Equal(t, 1, calls)

	slow.Release()
	require.Eventually(t, func() bool { return len(w.Plugins()) == 2 }, 5*time.Second, time.Millisecond,
		"the registration in flight ends")
	clk.Step(time.Second)
	require.Eventually(t, func() bool { return hasEvent(h, "deregister slow") }, 5*time.Second, time.Millisecond)
	require.Equal(t, []string{"register marker", "register slow", "deregister slow"}, h.Log())
	calls, _, most := slow.Calls()
	require.Equal(t, 1, calls)
	require.Equal(t, 1, most)
	require.Equal(t, []string{"marker"}, pluginNames(w.Plugins()))
	cancel()
	require.NoError(t, <-done)
}

func pluginNames(ps []pluginwatch.Plugin) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// The endpoint a plugin names must be the absolute path of a Unix socket;
// "unix://" is accepted and removed. Anything else is a failed
// registration the plugin is told of, its handler never called.
func TestPluginEndpointMustBeASocketPath(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		want     string // the endpoint registered; "" if refused
	}{
		{endpoint: "", want: "SOCKET"},
		{endpoint: "/var/lib/kubelet/plugins/csi.example.com/csi.sock", want: "/var/lib/kubelet/plugins/csi.example.com/csi.sock"},
		{endpoint: "unix:///var/lib/kubelet/plugins/csi.example.com/csi.sock", want: "/var/lib/kubelet/plugins/csi.example.com/csi.sock"},
		{endpoint: "dns:///attacker.example.com:443"},
		{endpoint: "tcp://203.0.113.66:9000"},
		{endpoint: "203.0.113.66:9000"},
		{endpoint: "csi.sock"},
		{endpoint: "unix://csi.sock"},
		{endpoint: "unix:csi.sock"},
		{endpoint: "unix://@abstract"},
		{endpoint: "unix-abstract:csi"},
	} {
		t.Run(tc.endpoint, func(t *testing.T) {
			dir := shortDir(t)
			h := &pluginwatchtest.Handler{}
			w, err := pluginwatch.New(pluginwatch.Config{Dir: dir, Handlers: map[string]pluginwatch.Handler{registerapi.CSIPlugin: h},
				Clock: testclock.NewFakeClock(time.Unix(1000, 0))})
			require.NoError(t, err)
			sock := filepath.Join(dir, "reg.sock")
			p, err := pluginwatchtest.Serve(sock, &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "csi.example.com",
				Endpoint: tc.endpoint, SupportedVersions: []string{"1.0.0"}})
			require.NoError(t, err)
			defer p.Stop()

			err = w.Sync(context.Background())
			require.Len(t, p.Statuses(), 1)
			if tc.want == "" {
				require.ErrorIs(t, err, pluginwatch.ErrInvalidEndpoint)
				require.False(t, p.Statuses()[0].PluginRegistered)
				require.Contains(t, p.Statuses()[0].Error, "not an absolute socket path")
				require.Contains(t, p.Statuses()[0].Error, tc.endpoint)
				require.Empty(t, h.Log(), "the handler is not called")
				require.Empty(t, w.Plugins())
				return
			}
			require.NoError(t, err)
			want := tc.want
			if want == "SOCKET" {
				want = sock
			}
			require.True(t, p.Statuses()[0].PluginRegistered)
			require.Equal(t, []pluginwatch.Plugin{{Socket: sock, Endpoint: want, Type: registerapi.CSIPlugin,
				Name: "csi.example.com", Versions: []string{"1.0.0"}}}, w.Plugins())
			require.Equal(t, want, h.Registered["csi.example.com"])
		})
	}
}
