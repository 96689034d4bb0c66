// Package pluginwatch finds node plugins by their registration sockets, as
// the kubelet's plugin manager does: a CSI driver (through its
// node-driver-registrar), a device plugin or a DRA driver puts a Unix
// socket in the registration directory (the kubelet's
// <root-dir>/plugins_registry), serving the kubelet's Registration service
// (k8s.io/kubelet/pkg/apis/pluginregistration/v1). The Watcher asks each
// new socket what it is (GetInfo), hands it to the Handler of its type
// (ValidatePlugin, then RegisterPlugin), tells the plugin the outcome
// (NotifyRegistrationStatus), and deregisters it when its socket goes.
//
// # Model
//
// Sync is one pass: it lists the sockets in the directory tree (names
// starting with "." are skipped, as upstream) and plans an operation for
// each socket path that needs one — register a new socket, deregister a
// plugin whose socket is gone, deregister and register again one whose
// socket was re-created (a plugin that restarted) — then runs them, each
// in its own goroutine (so Handlers are called concurrently for different
// sockets, as upstream's), and waits for them: Sync returns when the
// slowest has ended. A registration asks the socket
// what it is (GetInfo), checks the endpoint it names, hands it to its
// Handler and tells it the outcome (NotifyRegistrationStatus); each call
// to the plugin is bounded by Timeout (10s) on Config.Clock. As upstream's
// operation executor, operations are keyed by socket path: different
// sockets are served in parallel, so a socket that never answers delays
// only its own registration, and a path has at most one operation in
// flight: a pass leaves a busy path alone, and a later pass decides again
// from what it then finds (a socket removed while it was being registered
// is deregistered once that registration ended). A registration that
// fails is retried on a later pass after a back-off (500ms doubling to 2
// min, upstream's), so a plugin that came up before its consumer was
// ready, or whose handler failed, gets another chance without restarting.
// Run starts a pass every Period (1s, the period of upstream's
// reconciler) on Config.Clock without waiting for its operations; when
// its context ends it waits for the operations in flight, whose calls end
// with it, so no goroutine is left.
//
// The endpoint a plugin names in GetInfo must be the absolute path of a
// Unix socket ("unix:///path" is accepted as "/path"); none means the
// registration socket itself. Anything else (dns:///host:port,
// tcp://..., a relative path) fails the registration with
// ErrInvalidEndpoint, told to the plugin like a handler's refusal: a
// plugin cannot point its consumers at a network address. Handlers get
// the path.
//
// # Host duties
//
//  1. Create the directory's consumers: one Handler per plugin type (a
//     CSI driver registry for "CSIPlugin", say).
//  2. w, err := pluginwatch.New(pluginwatch.Config{Dir: filepath.Join(root, "plugins_registry"),
//     Handlers: map[string]pluginwatch.Handler{"CSIPlugin": drivers}})
//  3. go w.Run(ctx); Plugins lists what is registered. Handlers must be
//     safe for concurrent use and return when their ctx ends.
//
// # Differences from upstream (pkg/kubelet/pluginmanager)
//
// The directory is polled each Period rather than watched with inotify
// (upstream's reconciler acts each second on what the watcher saw, so a
// registration takes about as long); a socket is recognised by its path,
// inode and change time rather than by the time the watcher saw it. The
// deprecated plugin directory (<root-dir>/plugins) is not scanned for
// registration sockets. A socket re-created under a registered plugin is
// deregistered and registered again in one operation (upstream: an
// unregister, then a register on a later pass). Sync, a synchronous pass
// that waits for its operations, has no upstream counterpart. Upstream
// hands the endpoint to the handler as the plugin gave it; here it must be
// a socket path, and a "unix://" prefix is removed.
package pluginwatch
