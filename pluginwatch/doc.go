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
// starting with "." are skipped, as upstream), registers the new ones and
// the ones whose socket was re-created (a plugin that restarted), and
// deregisters the ones gone. A registration that fails is retried on a
// later pass after a back-off (500ms doubling to 2 min, upstream's), so a
// plugin that came up before its consumer was ready, or whose handler
// failed, gets another chance without restarting. Run calls Sync every
// Period (1s, the period of upstream's reconciler) on Config.Clock.
//
// # Host duties
//
//  1. Create the directory's consumers: one Handler per plugin type (a
//     CSI driver registry for "CSIPlugin", say).
//  2. w, err := pluginwatch.New(pluginwatch.Config{Dir: filepath.Join(root, "plugins_registry"),
//     Handlers: map[string]pluginwatch.Handler{"CSIPlugin": drivers}})
//  3. go w.Run(ctx); Plugins lists what is registered.
//
// # Differences from upstream (pkg/kubelet/pluginmanager)
//
// The directory is polled each Period rather than watched with inotify
// (upstream's reconciler acts each second on what the watcher saw, so a
// registration takes about as long); a socket is recognised by its path,
// inode and change time rather than by the time the watcher saw it. The
// deprecated plugin directory (<root-dir>/plugins) is not scanned for
// registration sockets.
package pluginwatch
