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

	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/internal/parking"
)

// ErrInvalidConfig wraps every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("pluginwatch: invalid config")

// ErrInvalidEndpoint is wrapped by the registration error of a plugin whose
// GetInfo names an endpoint that is not the absolute path of a Unix socket
// (a network address, a URL of another scheme, a relative path). The error
// is sent to the plugin, as a refusal by its handler is.
var ErrInvalidEndpoint = errors.New("pluginwatch: the plugin's endpoint is not an absolute socket path")

// Handler consumes the plugins of one type. Its methods are called from the
// Watcher's operations, one goroutine per socket: for one socket one call
// at a time, for different sockets concurrently, so an implementation
// must be safe for concurrent use. They may block (RegisterPlugin
// typically calls the plugin), but must return when ctx ends: Run waits
// for them before it returns.
type Handler interface {
	// ValidatePlugin checks a plugin before registration: its name and
	// the versions of the plugin's service it supports. An error is sent
	// to the plugin and the registration retried later.
	ValidatePlugin(name, endpoint string, versions []string) error
	// RegisterPlugin makes the plugin available; endpoint is the absolute
	// path of the Unix socket of its service (the registration socket
	// unless the plugin named another; a "unix://" prefix it gave is
	// removed). An error is sent to the plugin and retried later.
	RegisterPlugin(ctx context.Context, name, endpoint string, versions []string) error
	// DeregisterPlugin forgets a plugin whose socket is gone (or that
	// re-registers from a new socket). A plugin that moved to a new socket
	// may have registered there first, concurrently (the two sockets'
	// operations run in any order, as upstream's): a handler must ignore
	// a deregistration whose endpoint is not the one registered under
	// name.
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
	// Timeout bounds each call to a plugin's registration service
	// (GetInfo, NotifyRegistrationStatus); default 10s. A socket that
	// does not answer holds up only its own registration.
	Timeout time.Duration
}

// Plugin is a registered plugin.
type Plugin struct {
	// Socket is its registration socket; Endpoint the path of the socket
	// of its service (the same unless the plugin named another).
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
	busy       map[string]bool  // socket paths with an operation in flight
	parked     parking.State
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
	return &Watcher{cfg: cfg, registered: map[string]entry{}, busy: map[string]bool{},
		retry: flowcontrol.NewFakeBackOff(500*time.Millisecond, 2*time.Minute, cfg.Clock)}, nil
}

// Run scans the directory every Period until ctx ends, starting an
// operation for each socket that needs one; a socket whose operation is
// still in flight (a plugin slow to answer) is left for a later pass, and
// holds up no other. When ctx ends, Run waits for the operations in flight
// (their calls end with ctx) and returns nil; it deregisters nothing (the
// plugins outlive the agent, as on the kubelet).
func (w *Watcher) Run(ctx context.Context) error {
	var ops sync.WaitGroup
	defer ops.Wait()
	w.parked.Every(ctx, w.cfg.Clock, w.cfg.Period, func() {
		if _, err := w.start(ctx, &ops); err != nil {
			klog.FromContext(ctx).V(2).Info("Plugin registration pass failed", "dir", w.cfg.Dir, "err", err)
		}
	})
	return nil
}

// NextWake tells when Run next looks at the directory, on the injected
// clock, while Run waits for it (clockdrive.Waker); ok is false during a
// pass and when Run is not running. Registration operations started by a
// pass run on their own and do not hold Run: a test waits for them
// through Plugins or its handler. A next not after the clock's now means
// the tick has fired and Run is about to wake.
func (w *Watcher) NextWake() (next time.Time, ok bool) { return w.parked.Next() }

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

// Sync is one pass over the directory: it starts an operation for each
// socket that needs one (a new socket not in back-off after a failure, a
// socket gone, a socket re-created) and waits for them. The operations run
// concurrently, one per socket, so a socket that does not answer delays
// only its own (up to Timeout per call); a socket whose operation another
// pass started (a concurrent Run) is left alone. The error joins this
// pass's failures.
func (w *Watcher) Sync(ctx context.Context) error {
	var wg sync.WaitGroup
	ops, err := w.start(ctx, &wg)
	if err != nil {
		return err
	}
	wg.Wait()
	var errs []error
	for _, op := range ops {
		errs = append(errs, op.err)
	}
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
