package crisim

import (
	"context"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runtimeService implements the CRI runtime service on top of a Sim. The
// embedded Unimplemented server answers the RPCs listed in the package
// documentation (CheckpointContainer, metrics).
type runtimeService struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	sim    *Sim
	stream *streamServer // serves the Exec, Attach and PortForward URLs
}

// SetCondition sets a runtime condition reported by Status, such as
// runtimeapi.RuntimeReady or runtimeapi.NetworkReady; false simulates an
// unhealthy runtime. Unknown condition types are added after the others.
func (s *Sim) SetCondition(condType string, ok bool, reason, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cond := &runtimeapi.RuntimeCondition{Type: condType, Status: ok, Reason: reason, Message: message}
	for i, c := range s.conditions {
		if c.Type == condType {
			s.conditions[i] = cond
			return
		}
	}
	s.conditions = append(s.conditions, cond)
}

// Version reports Config.RuntimeName and Config.RuntimeVersion and the v1
// CRI API.
func (r *runtimeService) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version:           kubeletAPIVersion,
		RuntimeName:       r.sim.cfg.RuntimeName,
		RuntimeVersion:    r.sim.cfg.RuntimeVersion,
		RuntimeApiVersion: criAPIVersion,
	}, nil
}

// Status reports the runtime conditions set with SetCondition.
func (r *runtimeService) Status(context.Context, *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	s := r.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	conds := make([]*runtimeapi.RuntimeCondition, 0, len(s.conditions))
	for _, c := range s.conditions {
		conds = append(conds, proto.CloneOf(c))
	}
	return &runtimeapi.StatusResponse{
		Status:          &runtimeapi.RuntimeStatus{Conditions: conds},
		RuntimeHandlers: []*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{}}},
	}, nil
}

// RuntimeConfig reports Config.CgroupDriver.
func (r *runtimeService) RuntimeConfig(context.Context, *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	return &runtimeapi.RuntimeConfigResponse{
		Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: r.sim.cfg.CgroupDriver},
	}, nil
}

// UpdateRuntimeConfig accepts the update; the simulation has no network
// plugin to hand the pod CIDR to.
func (r *runtimeService) UpdateRuntimeConfig(context.Context, *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}
