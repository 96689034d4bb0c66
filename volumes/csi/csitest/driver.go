// Package csitest has a CSI driver for tests: the Identity and Node
// services and the kubelet's Registration service on one Unix socket, with
// volumes kept as directories (or bind mounts of a backing directory),
// call recording and injected failures.
package csitest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Driver is a CSI node plugin. Set its fields before Serve.
type Driver struct {
	csipb.UnimplementedIdentityServer
	csipb.UnimplementedNodeServer
	registerapi.UnimplementedRegistrationServer

	// Name is the driver's name; NodeID, MaxVolumes and Topology what
	// NodeGetInfo returns.
	Name, NodeID string
	MaxVolumes   int64
	Topology     map[string]string
	// Stage makes the driver stage volumes (STAGE_UNSTAGE_VOLUME);
	// MountGroup makes it apply the fsGroup itself (VOLUME_MOUNT_GROUP).
	Stage, MountGroup bool
	// Bind, if set, publishes a volume by bind-mounting (as root) a
	// directory per volume ID under DataDir at the target path, read-only
	// if the request says so; otherwise the target is a plain directory
	// holding a file named after the volume ID.
	Bind func(source, target string, readOnly bool) error
	// Unbind unmounts a target if it is a mount point (with Bind).
	Unbind  func(target string) error
	DataDir string

	srv *grpc.Server

	mu      sync.Mutex
	calls   []Call
	fail    map[string]error
	hang    map[string]chan struct{}
	staged  map[string]string // staging path -> volume ID
	targets map[string]string // target path -> volume ID
}

// Call is one recorded request.
type Call struct {
	Method string
	// Request is the request message.
	Request any
}

// Serve serves the driver on socket (CSI and registration alike) until
// Stop.
func (d *Driver) Serve(socket string) error {
	l, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	d.ServeListener(l)
	return nil
}

// ServeListener serves the driver on l, of any network (a TCP one, to
// check that a client refuses it), until Stop.
func (d *Driver) ServeListener(l net.Listener) {
	d.mu.Lock()
	d.staged, d.targets = map[string]string{}, map[string]string{}
	d.srv = grpc.NewServer()
	d.mu.Unlock()
	csipb.RegisterIdentityServer(d.srv, d)
	csipb.RegisterNodeServer(d.srv, d)
	registerapi.RegisterRegistrationServer(d.srv, d)
	go func() { _ = d.srv.Serve(l) }()
}

// Stop stops serving (a hung call is released first) and removes the
// socket.
func (d *Driver) Stop() {
	d.mu.Lock()
	for m, ch := range d.hang {
		close(ch)
		delete(d.hang, m)
	}
	d.mu.Unlock()
	d.srv.Stop()
}

// Fail makes calls of method fail with err until Fail(method, nil).
func (d *Driver) Fail(method string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail == nil {
		d.fail = map[string]error{}
	}
	if err == nil {
		delete(d.fail, method)
	} else {
		d.fail[method] = err
	}
}

// Hang makes calls of method block until their context ends or the
// returned func is called.
func (d *Driver) Hang(method string) (release func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.hang == nil {
		d.hang = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	d.hang[method] = ch
	var once sync.Once
	return func() {
		once.Do(func() {
			d.mu.Lock()
			if d.hang[method] == ch {
				delete(d.hang, method)
				close(ch)
			}
			d.mu.Unlock()
		})
	}
}

// Calls returns the recorded calls of the given methods (all if none).
func (d *Driver) Calls(methods ...string) []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Call
	for _, c := range d.calls {
		if len(methods) == 0 || slices.Contains(methods, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// Published returns the volume IDs by target path.
func (d *Driver) Published() map[string]string {
	return d.copyOf(func() map[string]string { return d.targets })
}

// Staged returns the volume IDs by staging path.
func (d *Driver) Staged() map[string]string {
	return d.copyOf(func() map[string]string { return d.staged })
}

func (d *Driver) copyOf(m func() map[string]string) map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]string{}
	for k, v := range m() {
		out[k] = v
	}
	return out
}

// enter records a call and applies injected failures and hangs.
func (d *Driver) enter(ctx context.Context, method string, req any) error {
	d.mu.Lock()
	d.calls = append(d.calls, Call{Method: method, Request: req})
	err, hang := d.fail[method], d.hang[method]
	d.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	return err
}

// GetInfo answers the kubelet's registration: a CSI plugin whose service
// is on the same socket.
func (d *Driver) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: d.Name, SupportedVersions: []string{"1.0.0"}}, nil
}

// NotifyRegistrationStatus accepts the outcome.
func (d *Driver) NotifyRegistrationStatus(context.Context, *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	return &registerapi.RegistrationStatusResponse{}, nil
}

// GetPluginInfo names the driver.
func (d *Driver) GetPluginInfo(context.Context, *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	return &csipb.GetPluginInfoResponse{Name: d.Name, VendorVersion: "0.1.0"}, nil
}

// GetPluginCapabilities reports none (a node-only driver).
func (d *Driver) GetPluginCapabilities(context.Context, *csipb.GetPluginCapabilitiesRequest) (*csipb.GetPluginCapabilitiesResponse, error) {
	return &csipb.GetPluginCapabilitiesResponse{}, nil
}

// Probe reports ready.
func (d *Driver) Probe(context.Context, *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	return &csipb.ProbeResponse{}, nil
}

// NodeGetInfo returns NodeID, MaxVolumes and Topology.
func (d *Driver) NodeGetInfo(ctx context.Context, req *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	if err := d.enter(ctx, "NodeGetInfo", req); err != nil {
		return nil, err
	}
	resp := &csipb.NodeGetInfoResponse{NodeId: d.NodeID, MaxVolumesPerNode: d.MaxVolumes}
	if len(d.Topology) > 0 {
		resp.AccessibleTopology = &csipb.Topology{Segments: d.Topology}
	}
	return resp, nil
}

// NodeGetCapabilities reports Stage and MountGroup.
func (d *Driver) NodeGetCapabilities(ctx context.Context, req *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	if err := d.enter(ctx, "NodeGetCapabilities", req); err != nil {
		return nil, err
	}
	var caps []*csipb.NodeServiceCapability
	add := func(t csipb.NodeServiceCapability_RPC_Type) {
		caps = append(caps, &csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{Rpc: &csipb.NodeServiceCapability_RPC{Type: t}}})
	}
	if d.Stage {
		add(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	}
	if d.MountGroup {
		add(csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP)
	}
	return &csipb.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

// NodeStageVolume records the volume as staged at the staging path,
// which the CO must have created.
func (d *Driver) NodeStageVolume(ctx context.Context, req *csipb.NodeStageVolumeRequest) (*csipb.NodeStageVolumeResponse, error) {
	if err := d.enter(ctx, "NodeStageVolume", req); err != nil {
		return nil, err
	}
	if !d.Stage {
		return nil, status.Error(codes.FailedPrecondition, "this driver does not stage")
	}
	if req.VolumeId == "" || req.StagingTargetPath == "" || req.VolumeCapability == nil {
		return nil, status.Error(codes.InvalidArgument, "volume ID, staging path and capability are required")
	}
	if info, err := os.Stat(req.StagingTargetPath); err != nil || !info.IsDir() {
		return nil, status.Errorf(codes.InvalidArgument, "the staging path %q is not a directory (the CO creates it)", req.StagingTargetPath)
	}
	d.mu.Lock()
	d.staged[req.StagingTargetPath] = req.VolumeId
	d.mu.Unlock()
	return &csipb.NodeStageVolumeResponse{}, nil
}

// NodeUnstageVolume forgets the staged volume (the CO removes the
// directory).
func (d *Driver) NodeUnstageVolume(ctx context.Context, req *csipb.NodeUnstageVolumeRequest) (*csipb.NodeUnstageVolumeResponse, error) {
	if err := d.enter(ctx, "NodeUnstageVolume", req); err != nil {
		return nil, err
	}
	d.mu.Lock()
	delete(d.staged, req.StagingTargetPath)
	d.mu.Unlock()
	return &csipb.NodeUnstageVolumeResponse{}, nil
}

// NodePublishVolume makes the volume appear at the target path.
func (d *Driver) NodePublishVolume(ctx context.Context, req *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	if err := d.enter(ctx, "NodePublishVolume", req); err != nil {
		return nil, err
	}
	if req.VolumeId == "" || req.TargetPath == "" || req.VolumeCapability == nil {
		return nil, status.Error(codes.InvalidArgument, "volume ID, target path and capability are required")
	}
	d.mu.Lock()
	_, staged := d.staged[req.StagingTargetPath]
	d.mu.Unlock()
	// An inline (ephemeral) volume is published without staging.
	if d.Stage && !staged && req.VolumeContext["csi.storage.k8s.io/ephemeral"] != "true" {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %q", req.VolumeId, req.StagingTargetPath)
	}
	if err := os.MkdirAll(req.TargetPath, 0o750); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if d.Bind != nil {
		src := filepath.Join(d.DataDir, req.VolumeId)
		if err := os.MkdirAll(src, 0o777); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		d.mu.Lock()
		_, done := d.targets[req.TargetPath]
		d.mu.Unlock()
		if !done {
			if err := d.Bind(src, req.TargetPath, req.Readonly); err != nil {
				return nil, status.Error(codes.Internal, err.Error())
			}
		}
	} else if err := os.WriteFile(filepath.Join(req.TargetPath, req.VolumeId), nil, 0o640); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	d.mu.Lock()
	d.targets[req.TargetPath] = req.VolumeId
	d.mu.Unlock()
	return &csipb.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume undoes NodePublishVolume and removes the target.
func (d *Driver) NodeUnpublishVolume(ctx context.Context, req *csipb.NodeUnpublishVolumeRequest) (*csipb.NodeUnpublishVolumeResponse, error) {
	if err := d.enter(ctx, "NodeUnpublishVolume", req); err != nil {
		return nil, err
	}
	remove := os.RemoveAll
	if d.Unbind != nil {
		// Unbind is told even of a target this process did not publish
		// (a restarted driver); never remove through a mount.
		if err := d.Unbind(req.TargetPath); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		remove = os.Remove
	}
	if err := remove(req.TargetPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Error(codes.Internal, fmt.Sprint(err))
	}
	d.mu.Lock()
	delete(d.targets, req.TargetPath)
	d.mu.Unlock()
	return &csipb.NodeUnpublishVolumeResponse{}, nil
}
