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
	// held, while not nil, holds GetInfo calls until it is closed.
	held                        chan struct{}
	calls, waiting, mostWaiting int
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

// GetInfo implements the Registration service: it answers Info, once
// Release is called if Hold was, or fails when the call ends first.
func (p *Plugin) GetInfo(ctx context.Context, _ *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	p.mu.Lock()
	p.calls++
	p.waiting++
	p.mostWaiting = max(p.mostWaiting, p.waiting)
	held := p.held
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.waiting--
		p.mu.Unlock()
	}()
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &registerapi.PluginInfo{Type: p.Info.Type, Name: p.Info.Name, Endpoint: p.Info.Endpoint,
		SupportedVersions: p.Info.SupportedVersions}, nil
}

// Hold makes GetInfo calls wait, until Release or until the call ends (the
// caller's timeout): a plugin that hangs.
func (p *Plugin) Hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = make(chan struct{})
	}
}

// Release answers the GetInfo calls held, and the later ones at once.
func (p *Plugin) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil {
		close(p.held)
		p.held = nil
	}
}

// Calls returns how many GetInfo calls arrived; Waiting how many are being
// answered (or held) now; MostWaiting the most there were at once.
func (p *Plugin) Calls() (calls, waiting, mostWaiting int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls, p.waiting, p.mostWaiting
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

// DeregisterPlugin forgets the plugin if it is registered at endpoint
// (as pluginwatch.Handler requires: a plugin that moved to a new socket
// may have registered there first).
func (h *Handler) DeregisterPlugin(_ context.Context, name, endpoint string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.Registered[name] != endpoint {
		return
	}
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
