package pluginwatch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/nodekit/nodekit/clockctx"
)

// register asks the socket what it is, hands it to its handler and tells
// the plugin the outcome. Each call to the plugin is bounded by Timeout.
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
	e.Endpoint, err = w.admit(ctx, e.Plugin)
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

// admit checks a plugin's endpoint, then validates and registers it with
// the handler of its type. It returns the endpoint the handler was given.
func (w *Watcher) admit(ctx context.Context, p Plugin) (string, error) {
	h, ok := w.cfg.Handlers[p.Type]
	if !ok {
		return "", fmt.Errorf("no handler for plugin type %q (plugin %q)", p.Type, p.Name)
	}
	endpoint, err := socketEndpoint(p.Endpoint, p.Socket)
	if err != nil {
		return "", fmt.Errorf("plugin %q: %w", p.Name, err)
	}
	if err := h.ValidatePlugin(p.Name, endpoint, p.Versions); err != nil {
		return "", fmt.Errorf("plugin %q is not valid: %w", p.Name, err)
	}
	if err := h.RegisterPlugin(ctx, p.Name, endpoint, p.Versions); err != nil {
		return "", fmt.Errorf("registering plugin %q: %w", p.Name, err)
	}
	return endpoint, nil
}

// socketEndpoint is the path of the socket a plugin serves on: the
// endpoint its GetInfo names, with a "unix://" or "unix:" prefix removed
// and cleaned, or its registration socket when it names none. Anything but
// an absolute path (dns:///host:port, tcp://..., a relative path, an
// abstract socket) is refused: the consumers dial Unix sockets only, and
// the plugin must not steer them elsewhere. volumes/csi applies the same
// rule to what it is given.
func socketEndpoint(endpoint, socket string) (string, error) {
	if endpoint == "" {
		return socket, nil
	}
	path := endpoint
	if rest, ok := strings.CutPrefix(path, "unix://"); ok {
		path = rest
	} else if rest, ok := strings.CutPrefix(path, "unix:"); ok {
		path = rest
	}
	if !filepath.IsAbs(path) || strings.ContainsRune(path, 0) {
		return "", fmt.Errorf("%w: %q (want /path/to/socket or unix:///path/to/socket)", ErrInvalidEndpoint, endpoint)
	}
	return filepath.Clean(path), nil
}
