// Package pluginwatchtest has a fake node plugin: a Registration service on
// a real Unix socket, recording what the watcher told it, and a recording
// Handler.
package pluginwatchtest

import (
	"context"
	"errors"
	"net"
	"sync"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/nodekit/nodekit/pluginwatch"
)

// Plugin serves the kubelet's Registration service on a socket.
type Plugin struct {
	registerapi.UnimplementedRegistrationServer
	Info registerapi.PluginInfo

	srv *grpc.Server

	mu       sync.Mutex
	statuses []*registerapi.RegistrationStatus
}

// Serve starts a plugin answering GetInfo with info on socket; Stop ends
// it (and removes the socket).
func Serve(socket string, info *registerapi.PluginInfo) (*Plugin, error) {
	l, err := net.Listen("unix", socket)
	if err != nil {
		return nil, err
	}
	p := &Plugin{srv: grpc.NewServer()}
	p.Info.Type, p.Info.Name, p.Info.Endpoint, p.Info.SupportedVersions = info.Type, info.Name, info.Endpoint, info.SupportedVersions
	registerapi.RegisterRegistrationServer(p.srv, p)
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

// Stop stops serving and removes the socket.
func (p *Plugin) Stop() { p.srv.Stop() }

// GetInfo implements the Registration service.
func (p *Plugin) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: p.Info.Type, Name: p.Info.Name, Endpoint: p.Info.Endpoint,
		SupportedVersions: p.Info.SupportedVersions}, nil
}

// NotifyRegistrationStatus records the status.
func (p *Plugin) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.statuses = append(p.statuses, &registerapi.RegistrationStatus{PluginRegistered: s.PluginRegistered, Error: s.Error})
	return &registerapi.RegistrationStatusResponse{}, nil
}

// Statuses returns the registration statuses received, oldest first.
func (p *Plugin) Statuses() []*registerapi.RegistrationStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*registerapi.RegistrationStatus(nil), p.statuses...)
}

var _ pluginwatch.Handler = (*Handler)(nil)

// Handler records registrations; Err, when set, fails RegisterPlugin.
type Handler struct {
	mu sync.Mutex
	// Err fails the next registrations while set.
	Err error
	// Registered holds the registered plugin names with their endpoints.
	Registered map[string]string
	// Events lists "register name" and "deregister name", in order.
	Events []string
}

// ValidatePlugin refuses an empty name.
func (h *Handler) ValidatePlugin(name, _ string, _ []string) error {
	if name == "" {
		return errors.New("empty plugin name")
	}
	return nil
}

// RegisterPlugin records the plugin, or returns Err.
func (h *Handler) RegisterPlugin(_ context.Context, name, endpoint string, _ []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.Err != nil {
		return h.Err
	}
	if h.Registered == nil {
		h.Registered = map[string]string{}
	}
	h.Registered[name] = endpoint
	h.Events = append(h.Events, "register "+name)
	return nil
}

// DeregisterPlugin forgets the plugin.
func (h *Handler) DeregisterPlugin(_ context.Context, name, _ string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.Registered, name)
	h.Events = append(h.Events, "deregister "+name)
}

// SetErr sets Err.
func (h *Handler) SetErr(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Err = err
}

// Log returns a copy of Events.
func (h *Handler) Log() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.Events...)
}
