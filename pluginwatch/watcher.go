package pluginwatch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/clockctx"
)

// ErrInvalidConfig wraps every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("pluginwatch: invalid config")

// Handler consumes the plugins of one type. Its methods are called from
// Sync, one at a time; they may block (RegisterPlugin typically calls the
// plugin), within ctx.
type Handler interface {
	// ValidatePlugin checks a plugin before registration: its name and
	// the versions of the plugin's service it supports. An error is sent
	// to the plugin and the registration retried later.
	ValidatePlugin(name, endpoint string, versions []string) error
	// RegisterPlugin makes the plugin available; endpoint is the socket
	// of its service (the registration socket unless the plugin named
	// another). An error is sent to the plugin and retried later.
	RegisterPlugin(ctx context.Context, name, endpoint string, versions []string) error
	// DeregisterPlugin forgets a plugin whose socket is gone (or that
	// re-registers from a new socket).
	DeregisterPlugin(ctx context.Context, name, endpoint string)
}

// Config configures a Watcher. Zero values are upstream's defaults.
type Config struct {
	// Dir is the registration directory (the kubelet's
	// <root-dir>/plugins_registry). Required; New creates it (0750).
	Dir string
	// Handlers consume the plugins by type ("CSIPlugin", "DevicePlugin",
	// "DRAPlugin"): a plugin of another type is refused. At least one.
	Handlers map[string]Handler
	// Clock drives Run's period, the retry back-off and the call timeout.
	// Default the real clock.
	Clock clock.WithTicker
	// Period is how often Run scans the directory; default 1s.
	Period time.Duration
	// Timeout bounds each call to a plugin's registration service;
	// default 10s.
	Timeout time.Duration
}

// Plugin is a registered plugin.
type Plugin struct {
	// Socket is its registration socket; Endpoint the socket of its
	// service (the same unless the plugin named another).
	Socket, Endpoint string
	Type, Name       string
	Versions         []string
}

// Watcher registers the plugins whose sockets are in a directory.
type Watcher struct {
	cfg   Config
	retry *flowcontrol.Backoff

	mu         sync.Mutex
	registered map[string]entry // by socket path
}

type entry struct {
	Plugin
	id socketID
}

// socketID tells a re-created socket from the one registered.
type socketID struct {
	ino   uint64
	mtime int64
}

// New checks cfg and returns a Watcher.
func New(cfg Config) (*Watcher, error) {
	if cfg.Dir == "" || !filepath.IsAbs(cfg.Dir) {
		return nil, fmt.Errorf("%w: Dir %q must be an absolute path", ErrInvalidConfig, cfg.Dir)
	}
	if len(cfg.Handlers) == 0 {
		return nil, fmt.Errorf("%w: no Handlers", ErrInvalidConfig)
	}
	for typ, h := range cfg.Handlers {
		if h == nil {
			return nil, fmt.Errorf("%w: Handlers[%q] is nil", ErrInvalidConfig, typ)
		}
	}
	if cfg.Period < 0 || cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: Period and Timeout must not be negative", ErrInvalidConfig)
	}
	if cfg.Period == 0 {
		cfg.Period = time.Second
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("%w: Dir: %v", ErrInvalidConfig, err)
	}
	return &Watcher{cfg: cfg, registered: map[string]entry{},
		retry: flowcontrol.NewFakeBackOff(500*time.Millisecond, 2*time.Minute, cfg.Clock)}, nil
}

// Run calls Sync every Period until ctx ends; it returns nil then, and
// deregisters nothing (the plugins outlive the agent, as on the kubelet).
func (w *Watcher) Run(ctx context.Context) error {
	t := w.cfg.Clock.NewTicker(w.cfg.Period)
	defer t.Stop()
	for {
		if err := w.Sync(ctx); err != nil {
			klog.FromContext(ctx).V(2).Info("Plugin registration pass failed", "dir", w.cfg.Dir, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Plugins lists the registered plugins, by socket path.
func (w *Watcher) Plugins() []Plugin {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Plugin, 0, len(w.registered))
	for _, e := range w.registered {
		out = append(out, e.Plugin)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Socket < out[j].Socket })
	return out
}

// Sync is one pass over the directory: new and re-created sockets are
// registered (unless in back-off after a failure), vanished ones
// deregistered. The error joins this pass's registration failures.
func (w *Watcher) Sync(ctx context.Context) error {
	found, err := w.sockets()
	if err != nil {
		return err
	}
	w.mu.Lock()
	var gone []entry
	for path, e := range w.registered {
		if id, ok := found[path]; !ok || id != e.id {
			gone = append(gone, e)
			delete(w.registered, path)
		}
	}
	w.mu.Unlock()
	for _, e := range gone {
		klog.FromContext(ctx).V(2).Info("Deregistering plugin", "type", e.Type, "name", e.Name, "socket", e.Socket)
		w.cfg.Handlers[e.Type].DeregisterPlugin(ctx, e.Name, e.Endpoint)
	}
	paths := make([]string, 0, len(found))
	for p := range found {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var errs []error
	now := w.cfg.Clock.Now()
	for _, path := range paths {
		w.mu.Lock()
		_, done := w.registered[path]
		w.mu.Unlock()
		if done || w.retry.IsInBackOffSinceUpdate(path, now) {
			continue
		}
		e, err := w.register(ctx, path, found[path])
		if err != nil {
			w.retry.Next(path, now)
			errs = append(errs, fmt.Errorf("plugin socket %s: %w", path, err))
			continue
		}
		w.retry.DeleteEntry(path)
		w.mu.Lock()
		w.registered[path] = e
		w.mu.Unlock()
	}
	w.retry.GC()
	return errors.Join(errs...)
}

// sockets lists the Unix sockets under Dir with their identities.
func (w *Watcher) sockets() (map[string]socketID, error) {
	found := map[string]socketID{}
	err := filepath.WalkDir(w.cfg.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == w.cfg.Dir {
				return err
			}
			return nil // a subdirectory that went away meanwhile
		}
		if path != w.cfg.Dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSocket == 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		id := socketID{mtime: info.ModTime().UnixNano()}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			id.ino = uint64(st.Ino)
		}
		found[path] = id
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", w.cfg.Dir, err)
	}
	return found, nil
}

// register asks the socket what it is, hands it to its handler and tells
// the plugin the outcome.
func (w *Watcher) register(ctx context.Context, path string, id socketID) (entry, error) {
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return entry{}, err
	}
	defer func() { _ = conn.Close() }()
	client := registerapi.NewRegistrationClient(conn)
	callCtx, cancel := clockctx.WithTimeout(ctx, w.cfg.Clock, w.cfg.Timeout)
	info, err := client.GetInfo(callCtx, &registerapi.InfoRequest{})
	cancel()
	if err != nil {
		return entry{}, fmt.Errorf("GetInfo: %w", err)
	}
	e := entry{id: id, Plugin: Plugin{Socket: path, Endpoint: info.Endpoint, Type: info.Type, Name: info.Name,
		Versions: info.SupportedVersions}}
	if e.Endpoint == "" {
		e.Endpoint = path
	}
	err = w.admit(ctx, e.Plugin)
	callCtx, cancel = clockctx.WithTimeout(ctx, w.cfg.Clock, w.cfg.Timeout)
	defer cancel()
	status := &registerapi.RegistrationStatus{PluginRegistered: err == nil}
	if err != nil {
		status.Error = err.Error()
	}
	if _, nerr := client.NotifyRegistrationStatus(callCtx, status); nerr != nil {
		// The plugin did not hear it: undo, so both sides agree to retry.
		if err == nil {
			w.cfg.Handlers[e.Type].DeregisterPlugin(ctx, e.Name, e.Endpoint)
		}
		return entry{}, errors.Join(err, fmt.Errorf("NotifyRegistrationStatus: %w", nerr))
	}
	if err != nil {
		return entry{}, err
	}
	klog.FromContext(ctx).V(2).Info("Registered plugin", "type", e.Type, "name", e.Name, "endpoint", e.Endpoint, "versions", e.Versions)
	return e, nil
}

// admit validates and registers a plugin with the handler of its type.
func (w *Watcher) admit(ctx context.Context, p Plugin) error {
	h, ok := w.cfg.Handlers[p.Type]
	if !ok {
		return fmt.Errorf("no handler for plugin type %q (plugin %q)", p.Type, p.Name)
	}
	if err := h.ValidatePlugin(p.Name, p.Endpoint, p.Versions); err != nil {
		return fmt.Errorf("plugin %q is not valid: %w", p.Name, err)
	}
	if err := h.RegisterPlugin(ctx, p.Name, p.Endpoint, p.Versions); err != nil {
		return fmt.Errorf("registering plugin %q: %w", p.Name, err)
	}
	return nil
}
